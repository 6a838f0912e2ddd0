"""OpenAI Chat Completions: the model's own form, so a request passes as it came."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from harness.gateway.wire import (
    BadRequest,
    JsonObject,
    Request,
    chat_chunks,
    chat_response,
    positive_int,
    request_of,
    sse,
)
from harness.models.base import Reply


class ChatWire:
    """``POST /v1/chat/completions``."""

    def parse(self, body: JsonObject) -> Request:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadRequest("messages: must be a non-empty list")
        for index, message in enumerate(messages):
            if not isinstance(message, dict) or not isinstance(message.get("role"), str):
                raise BadRequest(f"messages[{index}]: must be an object with a role")
            if not isinstance(message.get("name"), str | None):
                raise BadRequest(f"messages[{index}].name: must be a string")
            calls = message.get("tool_calls")
            if calls is not None and not _tool_list(calls):
                raise BadRequest(f"messages[{index}].tool_calls: must be a list of function calls")
        tools = body.get("tools")
        if tools is not None and not _tool_list(tools):
            raise BadRequest("tools: must be a list of function tools")
        max_tokens = positive_int(body, "max_completion_tokens", "max_tokens")
        return request_of(body, messages, tools, max_tokens)

    def answer(self, request: Request, reply: Reply) -> JsonObject:
        return chat_response(reply, request.model)

    def stream(self, request: Request, reply: Reply) -> Iterator[bytes]:
        for chunk in chat_chunks(reply, request.model):
            yield sse(chunk)
        yield sse("[DONE]")


def _tool_list(tools: Any) -> bool:
    return isinstance(tools, list) and all(
        isinstance(t, dict) and isinstance(t.get("function"), dict) for t in tools
    )
