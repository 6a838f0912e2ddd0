"""Anthropic Messages (``POST /v1/messages``), translated by litellm's own adapter: the one
``litellm.anthropic.messages`` uses for a provider that does not speak it.

The reply is whole when it is answered, so a streamed answer is litellm's stream of a whole
message (``FakeAnthropicMessagesStreamIterator``: each block in one delta), made from the
answer the adapter wrote, rather than the adapter's stream wrapper fed the reply in chunks.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

from pydantic_core import to_jsonable_python

from harness.gateway.litellm_forms import model_response, translated, unreadable
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
        from litellm.llms.anthropic.messages.native.fake_stream_iterator import (
            FakeAnthropicMessagesStreamIterator,
        )

        self._adapter = LiteLLMAnthropicMessagesAdapter()
        self._events = FakeAnthropicMessagesStreamIterator
        self._unreadable = unreadable()

    def parse(self, body: JsonObject) -> Request:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadRequest("messages: must be a non-empty list")
        max_tokens = positive_int(body, "max_tokens")
        try:
            chat, names = self._adapter.translate_anthropic_to_openai(cast(Any, body))
        except self._unreadable as exc:
            raise BadRequest(f"messages: cannot be read as Anthropic messages: {exc}") from exc
        return translated(body, "messages", chat, max_tokens, names)

    def answer(self, request: Request, reply: Reply) -> JsonObject:
        response = model_response(reply, request.model)
        answer = self._adapter.translate_openai_response_to_anthropic(response, request.names)
        return to_jsonable_python(answer, by_alias=False)  # its pydantic parts as JSON types

    def stream(self, request: Request, reply: Reply) -> Iterator[bytes]:
        return iter(self._events(cast(Any, self.answer(request, reply))))
