"""The reply in litellm's own types, which its translations take, and the request they make."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.gateway.wire import BadRequest, JsonObject, Request, chat_response, request_of
from harness.models.base import Reply


def translated(
    body: JsonObject,
    field: str,
    chat: Mapping[str, Any],
    max_tokens: int | None,
    names: Mapping[str, str] | None = None,
) -> Request:
    """The request ``body`` makes, from litellm's chat-completions translation of it
    (``chat``: its messages and tools, as litellm's typed dicts); refused, naming ``field``,
    where litellm read no message of it (it leaves out what it does not know)."""
    messages = [dict(message) for message in chat["messages"]]
    if not messages:
        raise BadRequest(f"{field}: no message could be read of it")
    tools = [dict(tool) for tool in chat.get("tools") or ()]
    return request_of(body, messages, tools, max_tokens, dict(names or {}))


def unreadable() -> tuple[type[Exception], ...]:
    """What litellm's translations raise for a request they cannot read: Python's own errors,
    and litellm's ``BadRequestError`` (media it cannot place, a tool's field of the wrong type)."""
    from litellm.exceptions import BadRequestError

    return (KeyError, TypeError, ValueError, AttributeError, BadRequestError)


def model_response(reply: Reply, model: str) -> Any:
    """``reply`` as litellm's ``ModelResponse`` (a chat completion naming ``model``)."""
    from litellm.types.utils import ModelResponse

    return ModelResponse(**chat_response(reply, model))
