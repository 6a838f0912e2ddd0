"""Anthropic Messages (``POST /v1/messages``), translated by litellm's own adapter: the one
``litellm.anthropic.messages`` uses for a provider that does not speak it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

from harness.gateway.litellm_forms import (
    chat_stream,
    model_response,
    plain,
    translated,
    typed_events,
)
from harness.gateway.wire import BadRequest, JsonObject, Request, positive_int
from harness.models.base import Reply
from harness.models.litellm_model import load_litellm


class AnthropicWire:
    """``POST /v1/messages`` (and the request ``/v1/messages/count_tokens`` counts)."""

    def __init__(self) -> None:
        load_litellm()
        from litellm.llms.anthropic.messages.adapters.transformation import (
            LiteLLMAnthropicMessagesAdapter,
        )

        self._adapter = LiteLLMAnthropicMessagesAdapter()

    def parse(self, body: JsonObject) -> Request:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadRequest("messages: must be a non-empty list")
        max_tokens = positive_int(body, "max_tokens")
        try:
            chat, names = self._adapter.translate_anthropic_to_openai(cast(Any, body))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise BadRequest(f"messages: cannot be read as Anthropic messages: {exc}") from exc
        return translated(body, chat, max_tokens, names)

    def answer(self, request: Request, reply: Reply) -> JsonObject:
        response = model_response(reply, request.model)
        return plain(self._adapter.translate_openai_response_to_anthropic(response, request.names))

    def stream(self, request: Request, reply: Reply) -> Iterator[bytes]:
        from litellm.llms.anthropic.messages.adapters.streaming_iterator import (
            AnthropicStreamWrapper,
        )

        events = AnthropicStreamWrapper(
            completion_stream=cast(Any, iter(chat_stream(reply, request.model))),
            model=request.model,
            tool_name_mapping=request.names,
        )
        return typed_events(events)
