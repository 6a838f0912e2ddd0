"""A tiny Anthropic-compatible ``/v1/messages`` server on 127.0.0.1, scripted per request.

The same script entries as :mod:`tests.openai_server` (``Text``, ``ToolCalls``, ``Status``,
``Hang``), answered in Anthropic's Messages dialect, so litellm's real ``anthropic/`` provider
(with ``api_base`` pointing here) parses them. Bounded the same way: hangs end on their own and a
deadline timer stops the server.
"""

from __future__ import annotations

import json
from typing import Any

from tests.openai_server import OpenAIServer, Text, ToolCalls

MESSAGES_PATHS = ("/v1/messages",)

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


class AnthropicServer(OpenAIServer):
    """Serve scripted Messages API replies until :meth:`stop` or ``deadline`` seconds pass."""

    paths = MESSAGES_PATHS

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def render(self, body: dict[str, Any], behaviour: Text | ToolCalls) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if behaviour.content:
            content.append({"type": "text", "text": behaviour.content})
        stop = "end_turn"
        if isinstance(behaviour, ToolCalls):
            stop = "tool_use"
            content.extend(
                {"type": "tool_use", "id": id_, "name": name, "input": json.loads(arguments)}
                for id_, name, arguments in behaviour.calls
            )
        # Anthropic's input_tokens excludes the tokens read from (or written to) the cache.
        return {
            "id": "msg_test",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "unknown"),
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {
                "input_tokens": behaviour.prompt_tokens - behaviour.cached_tokens,
                "output_tokens": behaviour.completion_tokens,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": behaviour.cached_tokens,
            },
        }

    def error(self, code: int, message: str) -> dict[str, Any]:
        kind = _ERROR_TYPES.get(code, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
