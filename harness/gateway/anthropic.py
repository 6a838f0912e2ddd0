"""Anthropic Messages (``POST /v1/messages``) read into chat-completions form, and the model's
reply written back as a message or as its stream of events.

What is read of a request is typed below (fields the model's call does not take, such as
``thinking``, ``metadata`` or ``cache_control``, are not read). The chat form: the ``system``
text first; a user turn's ``tool_result`` blocks become ``tool`` messages, its other blocks a
user message after them (text and images); an assistant turn's text and ``tool_use`` blocks one
assistant message with its tool calls (thinking blocks are dropped: the model does not take
them back); a ``system`` turn inside the conversation a user message (chat providers take a
system message only first). Tools become function tools; a tool without an input schema (a
server tool of Anthropic's) is not offered.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

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
from harness.models.base import Message, Reply, ToolSchema


class _Block(BaseModel):
    """One content block, of any type: only what the type it has uses is read."""

    model_config = ConfigDict(extra="ignore")
    type: str
    text: str = ""
    id: str = ""
    name: str = ""
    input: Any = None
    tool_use_id: str = ""
    content: str | list[_Block] | None = None
    source: dict[str, Any] | None = None


class _Turn(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: Literal["user", "assistant", "system"]
    content: str | list[_Block]


class _Tool(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str
    description: str | None = None
    input_schema: dict[str, Any] | None = None


class _Messages(BaseModel):
    """What the gateway reads of a Messages request (``model``, ``stream`` and ``max_tokens``
    are read as every wire reads them)."""

    model_config = ConfigDict(extra="ignore")
    messages: list[_Turn]
    system: str | list[_Block] | None = None
    tools: list[_Tool] | None = None


class AnthropicWire:
    """``POST /v1/messages`` (and the request ``/v1/messages/count_tokens`` counts)."""

    def parse(self, body: JsonObject) -> Request:
        if not isinstance(body.get("messages"), list) or not body["messages"]:
            raise BadRequest("messages: must be a non-empty list")
        max_tokens = positive_int(body, "max_tokens")
        request = validated(_Messages, body)
        names: dict[str, str] = {}
        messages: list[Message] = []
        system = _text(request.system)
        if system:
            messages.append({"role": "system", "content": system})
        for turn in request.messages:
            messages.extend(_chat(turn, names))
        tools = [_function(tool, names) for tool in request.tools or () if tool.input_schema]
        return request_of(body, messages, tools, max_tokens, names)

    def answer(self, request: Request, reply: Reply) -> JsonObject:
        return {
            "id": "msg_" + uuid.uuid4().hex,
            "type": "message",
            "role": "assistant",
            "model": request.model,
            "content": _blocks(reply, request.names),
            "stop_reason": _stop_reason(reply),
            "stop_sequence": None,
            "usage": _usage(reply),
        }

    def stream(self, request: Request, reply: Reply) -> Iterator[bytes]:
        """The events of a streamed message: its start, each block whole in one delta, the stop
        reason with the usage, the end."""
        usage = _usage(reply)
        message: JsonObject = {
            "id": "msg_" + uuid.uuid4().hex,
            "type": "message",
            "role": "assistant",
            "model": request.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": usage["input_tokens"], "output_tokens": 0},
        }
        yield _event({"type": "message_start", "message": message})
        calls = iter(reply.tool_calls)
        for index, block in enumerate(_blocks(reply, request.names)):
            if block["type"] == "text":
                start: JsonObject = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": block["text"]}
            else:  # the arguments as the model wrote them
                start = {**block, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": next(calls).arguments_json}
            yield _event({"type": "content_block_start", "index": index, "content_block": start})
            yield _event({"type": "content_block_delta", "index": index, "delta": delta})
            yield _event({"type": "content_block_stop", "index": index})
        stop = {"stop_reason": _stop_reason(reply), "stop_sequence": None}
        yield _event({"type": "message_delta", "delta": stop, "usage": usage})
        yield _event({"type": "message_stop"})


def _chat(turn: _Turn, names: dict[str, str]) -> list[Message]:
    """One turn of the conversation as chat messages."""
    if isinstance(turn.content, str):
        role = "user" if turn.role == "system" else turn.role
        return [{"role": role, "content": turn.content}]
    if turn.role == "assistant":
        return [_assistant(turn.content, names)]
    messages: list[Message] = []
    parts: list[JsonObject] = []
    for block in turn.content:
        if block.type == "tool_result":
            content, images = _result(block.content)
            messages.append({"role": "tool", "tool_call_id": block.tool_use_id, "content": content})
            parts.extend(images)
        else:
            parts.extend(_part(block))
    if parts:
        messages.append({"role": "user", "content": _content(parts)})
    return messages


def _assistant(blocks: list[_Block], names: dict[str, str]) -> Message:
    text = "".join(block.text for block in blocks if block.type == "text")
    calls = [
        {
            "id": block.id,
            "type": "function",
            "function": {
                "name": short_name(block.name, names),
                "arguments": json.dumps({} if block.input is None else block.input),
            },
        }
        for block in blocks
        if block.type == "tool_use"
    ]
    message: Message = {"role": "assistant", "content": text or (None if calls else "")}
    if calls:
        message["tool_calls"] = calls
    return message


def _result(content: str | list[_Block] | None) -> tuple[str, list[JsonObject]]:
    """A tool result's text, and its images (which a chat ``tool`` message cannot hold: they go
    in the user message after it)."""
    if content is None or isinstance(content, str):
        return content or "", []
    text = "\n".join(block.text for block in content if block.type == "text")
    images = [part for block in content if block.type == "image" for part in _part(block)]
    return text, images


def _part(block: _Block) -> list[JsonObject]:
    """A user block as chat content parts: text, an image; any other kind is not sent."""
    if block.type == "text":
        return [{"type": "text", "text": block.text}]
    source = block.source or {}
    if block.type == "image" and source.get("type") == "base64":
        url = f"data:{source.get('media_type')};base64,{source.get('data')}"
        return [{"type": "image_url", "image_url": {"url": url}}]
    if block.type == "image" and isinstance(source.get("url"), str):
        return [{"type": "image_url", "image_url": {"url": source["url"]}}]
    return []


def _content(parts: list[JsonObject]) -> str | list[JsonObject]:
    """One text part as a plain string (the form every chat provider takes), else the parts."""
    if len(parts) == 1 and parts[0]["type"] == "text":
        return str(parts[0]["text"])
    return parts


def _text(system: str | list[_Block] | None) -> str:
    if isinstance(system, list):
        return "\n".join(block.text for block in system if block.type == "text")
    return system or ""


def _function(tool: _Tool, names: dict[str, str]) -> ToolSchema:
    function: JsonObject = {"name": short_name(tool.name, names), "parameters": tool.input_schema}
    if tool.description:
        function["description"] = tool.description
    return {"type": "function", "function": function}


def _blocks(reply: Reply, names: dict[str, str]) -> list[JsonObject]:
    """The reply's content blocks: its text, then its tool calls under the client's names (an
    empty text block where the reply holds neither)."""
    blocks: list[JsonObject] = []
    if reply.content or not reply.tool_calls:
        blocks.append({"type": "text", "text": reply.content or ""})
    for call in reply.tool_calls:
        name = names.get(call.name, call.name)
        blocks.append(
            {"type": "tool_use", "id": call.id, "name": name, "input": _input(call.arguments_json)}
        )
    return blocks


def _input(arguments: str) -> JsonObject:
    """A tool call's arguments as the object ``tool_use`` holds (empty where the model's JSON
    is not an object: the agent's tool then names what is missing)."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _stop_reason(reply: Reply) -> str:
    return "tool_use" if reply.tool_calls else "end_turn"


def _usage(reply: Reply) -> JsonObject:
    usage = reply.usage
    return {"input_tokens": usage.prompt_tokens, "output_tokens": usage.completion_tokens}


def _event(data: JsonObject) -> bytes:
    return sse(data, event=data["type"])
