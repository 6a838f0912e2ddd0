"""OpenAI Responses (``POST /v1/responses``) read into chat-completions form, and the model's
reply written back as a response or as its stream of events.

What is read of a request is typed below. The chat form: ``instructions`` first as the system
message; each input item in order: a message (``developer`` and ``system`` ones a system
message while nothing else came before them, else a user message: chat providers take system
messages only first), a ``function_call`` or ``custom_tool_call`` a tool call of the assistant
message before it (or of a new one), its output a ``tool`` message; reasoning and the items of
tools the gateway does not serve are dropped. Function tools are offered as they are, a
``custom`` tool (free-form input, such as Codex's ``apply_patch``) as a function with one
``content`` string, its grammar in the description; its calls are answered as
``custom_tool_call`` items with that string as their input.

The gateway keeps no responses: a request names its whole input (``store: false``, as
coding agents send it), never a ``previous_response_id``.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, ConfigDict

from harness.core.usage import Usage
from harness.gateway.server import compact
from harness.gateway.wire import (
    BadRequest,
    JsonObject,
    Request,
    positive_int,
    request_of,
    short_name,
    sse,
    validated,
)
from harness.models.base import Message, Reply, ToolCall, ToolSchema

_CALLS = ("function_call", "custom_tool_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output")
_TEXTS = ("input_text", "output_text", "text")


class _Part(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: str
    text: str = ""
    image_url: str | None = None


class _Item(BaseModel):
    """One input item, of any type: only what the type it has uses is read."""

    model_config = ConfigDict(extra="ignore")
    type: str = "message"
    role: str = ""
    content: str | list[_Part] | None = None
    call_id: str = ""
    name: str = ""
    arguments: str | dict[str, Any] = ""
    input: str = ""
    output: str | list[_Part] | None = None


class _Tool(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: str
    name: str = ""
    description: str | None = None
    parameters: dict[str, Any] | None = None
    format: dict[str, Any] | None = None


class _Responses(BaseModel):
    model_config = ConfigDict(extra="ignore")
    input: str | list[_Item]
    instructions: str | None = None
    tools: list[_Tool] | None = None


class ResponsesWire:
    """``POST /v1/responses``."""

    def parse(self, body: JsonObject) -> Request:
        given = body.get("input")
        if not isinstance(given, str | list) or not given:
            raise BadRequest("input: must be a non-empty string or list")
        if body.get("previous_response_id"):
            raise BadRequest(
                "previous_response_id: the gateway keeps no responses; send the whole input"
            )
        max_tokens = positive_int(body, "max_output_tokens")
        request = validated(_Responses, body)
        names: dict[str, str] = {}
        messages: list[Message] = []
        if request.instructions:
            messages.append({"role": "system", "content": request.instructions})
        if isinstance(request.input, str):
            messages.append({"role": "user", "content": request.input})
        else:
            for item in request.input:
                _add(messages, item, names)
        tools = [_function(tool, names) for tool in request.tools or () if tool.type in _KINDS]
        freeform = frozenset(tool.name for tool in request.tools or () if tool.type == "custom")
        return request_of(body, messages, tools, max_tokens, names, freeform)

    def answer(self, request: Request, reply: Reply) -> JsonObject:
        return _response(request, _ident(), "completed", _items(request, reply), reply.usage)

    def stream(self, request: Request, reply: Reply) -> Iterator[bytes]:
        """The events of a streamed response: created, each output item added, its content in
        one delta, done; completed with the usage."""
        events, ident = _Events(), _ident()
        started = compact(_response(request, ident, "in_progress"))  # the same in both events
        yield events.encoded("response.created", started)
        yield events.encoded("response.in_progress", started)
        items = _items(request, reply)
        for index, item in enumerate(items):
            yield from _item_events(events, index, item)
        done = _response(request, ident, "completed", items, reply.usage)
        yield events.send("response.completed", response=done)


def _item_events(events: _Events, index: int, item: JsonObject) -> Iterator[bytes]:
    """One output item's events: added, its text or its call's input, done."""
    where = {"item_id": item["id"], "output_index": index}
    if item["type"] == "message":
        text = item["content"][0]["text"]
        part = {"type": "output_text", "text": "", "annotations": []}
        started = {**item, "status": "in_progress", "content": []}
        yield events.send("response.output_item.added", output_index=index, item=started)
        yield events.send("response.content_part.added", **where, content_index=0, part=part)
        for kind, more in (("delta", {"delta": text}), ("done", {"text": text})):
            yield events.send(f"response.output_text.{kind}", **where, content_index=0,
                              **more, logprobs=[])  # fmt: skip
        yield events.send("response.content_part.done", **where, content_index=0,
                          part={**part, "text": text})  # fmt: skip
    else:
        field = "arguments" if item["type"] == "function_call" else "input"
        kind = "function_call_arguments" if field == "arguments" else "custom_tool_call_input"
        started = {**item, "status": "in_progress", field: ""}
        yield events.send("response.output_item.added", output_index=index, item=started)
        yield events.send(f"response.{kind}.delta", **where, delta=item[field])
        yield events.send(f"response.{kind}.done", **where, **{field: item[field]})
    yield events.send("response.output_item.done", output_index=index, item=item)


_KINDS = ("function", "custom")
"""The tools offered to the model: the others (OpenAI's hosted tools) it cannot call here."""


def _add(messages: list[Message], item: _Item, names: dict[str, str]) -> None:
    """``item`` added to the chat ``messages``."""
    if item.type == "message":
        role = item.role
        if role in ("developer", "system"):
            first = all(message["role"] == "system" for message in messages)
            role = "system" if first else "user"
        text = _texts(item.content)
        if role == "assistant":
            messages.append({"role": "assistant", "content": text})
        else:
            messages.append(
                {"role": role, "content": _user(item.content) if role == "user" else text}
            )
    elif item.type in _CALLS:
        if item.type == "custom_tool_call":
            arguments = json.dumps({"content": item.input})
        elif isinstance(item.arguments, str):
            arguments = item.arguments or "{}"
        else:  # sent as an object, not as its JSON text
            arguments = json.dumps(item.arguments)
        call = {"id": item.call_id, "type": "function",
                "function": {"name": short_name(item.name, names), "arguments": arguments}}  # fmt: skip
        last = messages[-1] if messages else None
        if last is None or last["role"] != "assistant":
            last = {"role": "assistant", "content": None}
            messages.append(last)
        last.setdefault("tool_calls", []).append(call)
    elif item.type in _OUTPUTS:
        messages.append(
            {"role": "tool", "tool_call_id": item.call_id, "content": _texts(item.output)}
        )


def _texts(content: str | list[_Part] | None) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    return "\n".join(part.text for part in content if part.type in _TEXTS)


def _user(content: str | list[_Part] | None) -> str | list[JsonObject]:
    """A user message's content: its text, or its parts where it holds an image."""
    if not isinstance(content, list) or all(part.type in _TEXTS for part in content):
        return _texts(content)
    return [
        {"type": "text", "text": part.text}
        if part.type in _TEXTS
        else {"type": "image_url", "image_url": {"url": part.image_url}}
        for part in content
        if part.type in _TEXTS or (part.type == "input_image" and part.image_url)
    ]


def _function(tool: _Tool, names: dict[str, str]) -> ToolSchema:
    function: JsonObject = {"name": short_name(tool.name, names)}
    description = tool.description or ""
    if tool.type == "custom":
        form = tool.format or {}
        if form.get("definition"):
            description += f"\n\nFormat:\n```{form.get('syntax', '')}\n{form['definition']}\n```"
        function["parameters"] = {
            "type": "object",
            "properties": {"content": {"type": "string", "description": f"The {tool.name} input"}},
            "required": ["content"],
        }
    else:
        function["parameters"] = tool.parameters or {"type": "object", "properties": {}}
    if description:
        function["description"] = description
    return {"type": "function", "function": function}


def _items(request: Request, reply: Reply) -> list[JsonObject]:
    """The reply's output items: its text as a message, then its tool calls (an empty message
    where the reply holds neither)."""
    items: list[JsonObject] = []
    if reply.content or not reply.tool_calls:
        text = {"type": "output_text", "text": reply.content or "", "annotations": []}
        items.append({"type": "message", "id": "msg_" + uuid.uuid4().hex, "status": "completed",
                      "role": "assistant", "content": [text]})  # fmt: skip
    items.extend(_call(call, request) for call in reply.tool_calls)
    return items


def _call(call: ToolCall, request: Request) -> JsonObject:
    name = request.names.get(call.name, call.name)
    if name in request.freeform:
        return {"type": "custom_tool_call", "id": "ctc_" + call.id, "call_id": call.id,
                "name": name, "input": _freeform(call.arguments_json), "status": "completed"}  # fmt: skip
    return {"type": "function_call", "id": "fc_" + call.id, "call_id": call.id, "name": name,
            "arguments": call.arguments_json, "status": "completed"}  # fmt: skip


def _freeform(arguments: str) -> str:
    """A custom tool's input from the ``content`` the model gave (its JSON as it is where it
    holds none)."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    content = value.get("content") if isinstance(value, dict) else None
    return content if isinstance(content, str) else arguments


def _response(
    request: Request,
    ident: str,
    status: str,
    output: list[JsonObject] | None = None,
    usage: Usage | None = None,
) -> JsonObject:
    body = request.body
    return {
        "id": ident,
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "model": request.model,
        "output": output or [],
        "instructions": body.get("instructions"),
        "tools": body.get("tools") or [],
        "tool_choice": body.get("tool_choice", "auto"),
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "max_output_tokens": request.max_tokens,
        "store": False,
        "error": None,
        "incomplete_details": None,
        "metadata": {},
        "usage": None if usage is None else {
            "input_tokens": usage.prompt_tokens,
            "input_tokens_details": {"cached_tokens": usage.cached_tokens},
            "output_tokens": usage.completion_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage.total_tokens,
        },
    }  # fmt: skip


def _ident() -> str:
    return "resp_" + uuid.uuid4().hex


class _Events:
    """Server-sent events numbered in order, as the Responses stream numbers them."""

    def __init__(self) -> None:
        self.number = 0

    def send(self, kind: str, **data: Any) -> bytes:
        event = sse({"type": kind, **data, "sequence_number": self.number}, event=kind)
        self.number += 1
        return event

    def encoded(self, kind: str, response: str) -> bytes:
        """An event holding ``response``, a response's JSON text."""
        data = f'{{"type":"{kind}","response":{response},"sequence_number":{self.number}}}'
        self.number += 1
        return sse(data, event=kind)
