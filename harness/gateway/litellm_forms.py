"""The reply in litellm's own types, which its translations take, and their output as JSON."""

from __future__ import annotations

from typing import Any

from harness.gateway.wire import JsonObject


def model_response(chat: JsonObject) -> Any:
    """A chat-completions response body as litellm's ``ModelResponse``."""
    from litellm.types.utils import ModelResponse

    return ModelResponse(**chat)


def chat_stream(chunks: list[JsonObject]) -> list[Any]:
    """Chat-completions chunks as litellm's ``ModelResponseStream`` chunks."""
    from litellm.types.utils import ModelResponseStream

    return [ModelResponseStream(**chunk) for chunk in chunks]


def plain(value: Any) -> Any:
    """``value`` with every pydantic model in it dumped to JSON types."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value
