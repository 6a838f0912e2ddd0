"""A wire format the gateway speaks, and the chat-completions form every request is answered in.

A :class:`Wire` turns a request body of its format into a :class:`Request` (chat-completions
messages and tool schemas: what a :class:`~harness.models.base.Model` takes) and the model's
:class:`~harness.models.base.Reply` back into its format, whole or as server-sent events.
OpenAI Chat Completions is the model's own form and needs no translation (:mod:`.chat`); the
Anthropic Messages (:mod:`.anthropic`) and OpenAI Responses (:mod:`.responses`) wires use
litellm's own translations, fed with the reply as a chat-completions response.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from harness.core.text import compact_json
from harness.models.base import Message, Reply, ToolSchema

JsonObject = dict[str, Any]


class BadRequest(ValueError):
    """A request body the gateway cannot take; the message names the field."""


@dataclass(frozen=True)
class Request:
    """One model request in chat-completions form, with what its wire needs to answer it."""

    messages: list[Message]
    tools: list[ToolSchema] | None
    max_tokens: int | None
    stream: bool
    model: str
    """The model the client asked for: named in the answer (the loop's model answers)."""
    body: JsonObject
    """The body as the client sent it (a wire's answer may echo parts of it)."""
    names: dict[str, str]
    """Tool names shortened for the chat form -> the client's own (Anthropic's long names)."""


def request_of(
    body: JsonObject,
    messages: list[Message],
    tools: list[ToolSchema] | None,
    max_tokens: int | None,
    names: dict[str, str] | None = None,
) -> Request:
    """The request ``body`` makes, in chat-completions form: its ``model`` and ``stream`` read
    from ``body`` here, the rest as its wire read it."""
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise BadRequest(f"stream: must be true or false, got {stream!r}")
    return Request(
        messages=messages,
        tools=tools or None,
        max_tokens=max_tokens,
        stream=stream,
        model=model_name(body),
        body=body,
        names=names or {},
    )


class Wire(Protocol):
    """One request format: parse a body, answer it whole or streamed."""

    def parse(self, body: JsonObject) -> Request: ...

    def answer(self, request: Request, reply: Reply) -> JsonObject: ...

    def stream(self, request: Request, reply: Reply) -> Iterator[bytes]: ...


MAX_DEPTH = 64
"""Levels of nesting a request body may hold (the body itself is the first). Deeper, a walk of
it (the redactor's, litellm's translations, pydantic's) could exhaust Python's stack after the
model was asked: a request paid for and never answered."""


_NESTS = (dict, list)


def check_depth(body: JsonObject) -> None:
    """Refuse ``body`` if it is nested deeper than :data:`MAX_DEPTH`, walked level by level
    (no recursion of its own)."""
    level: list[Any] = [body]
    for _ in range(MAX_DEPTH):
        values = [node.values() for node in level if isinstance(node, dict)]
        inner = [item for items in values for item in items if isinstance(item, _NESTS)]
        inner += [
            item for node in level if isinstance(node, list) for item in node
            if isinstance(item, _NESTS)
        ]  # fmt: skip
        if not inner:
            return
        level = inner
    raise BadRequest(f"the body may be nested at most {MAX_DEPTH} levels deep")


def error_body(endpoint: str, kind: str, message: str) -> JsonObject:
    """An error as the client of ``endpoint`` reads one: Anthropic's form or OpenAI's."""
    if endpoint.startswith("/messages"):
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": kind, "code": kind}}


def chat_response(reply: Reply, model: str) -> JsonObject:
    """``reply`` as an OpenAI chat-completions response body."""
    choice = {"index": 0, "message": reply.to_message(), "finish_reason": finish_reason(reply)}
    return {
        "id": "chatcmpl-" + uuid.uuid4().hex,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [choice],
        "usage": usage_of(reply),
    }


def chat_chunks(reply: Reply, model: str) -> list[JsonObject]:
    """``reply`` as the chunks of a streamed chat completion: its text, its tool calls, and a
    last chunk with the finish reason and the usage."""
    head = {
        "id": "chatcmpl-" + uuid.uuid4().hex,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }

    def chunk(delta: JsonObject, finish: str | None = None, **more: Any) -> JsonObject:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **more}

    chunks = [chunk({"role": "assistant", "content": reply.content or ""})]
    if reply.tool_calls:
        calls = [{"index": i, **call.to_message_part()} for i, call in enumerate(reply.tool_calls)]
        chunks.append(chunk({"tool_calls": calls}))
    chunks.append(chunk({}, finish_reason(reply), usage=usage_of(reply)))
    return chunks


def finish_reason(reply: Reply) -> str:
    """Why the reply ended, as a chat completion says it (a reply cut at its token limit:
    ``length``, which the other wires' translations carry as their own)."""
    if reply.truncated:
        return "length"
    return "tool_calls" if reply.tool_calls else "stop"


def usage_of(reply: Reply) -> JsonObject:
    """The reply's usage as a chat completion reports it (its cached prompt tokens too)."""
    usage = reply.usage
    reported: JsonObject = {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }
    if usage.cached_tokens:
        reported["prompt_tokens_details"] = {"cached_tokens": usage.cached_tokens}
    return reported


def sse(data: JsonObject | str, event: str | None = None) -> bytes:
    """One server-sent event (``event:`` line only where the format names its events)."""
    text = data if isinstance(data, str) else compact_json(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n".encode()


def positive_int(body: JsonObject, *names: str) -> int | None:
    """The first of ``names`` that ``body`` holds, a positive integer; None if it holds none."""
    for name in names:
        value = body.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise BadRequest(f"{name}: must be a positive integer, got {value!r}")
        return value
    return None


def model_name(body: JsonObject) -> str:
    model = body.get("model", "")
    if not isinstance(model, str):
        raise BadRequest(f"model: must be a string, got {model!r}")
    return model
