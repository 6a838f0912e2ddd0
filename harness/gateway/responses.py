"""OpenAI Responses (``POST /v1/responses``), translated by litellm's own code: the bridge
``litellm.responses`` uses for a provider that has only chat completions.

The reply is whole when it is answered, so a streamed answer is litellm's stream of a whole
response (``build_synthetic_response_events``, as it streams a response it did not get as a
stream), made from the answer the bridge wrote, each item's text or input in one delta.

The gateway keeps no responses: a request names its whole input (``store: false``, as
coding agents send it), never a ``previous_response_id``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import Any

from pydantic_core import to_jsonable_python

from harness.gateway.litellm_forms import model_response, translated, unreadable
from harness.gateway.wire import BadRequest, JsonObject, Request, model_name, positive_int, sse
from harness.models.base import Reply
from harness.models.litellm_model import load_litellm

_NOT_PARAMETERS = ("model", "input", "stream")


class ResponsesWire:
    """``POST /v1/responses``."""

    def __init__(self) -> None:
        load_litellm()
        from litellm.responses.litellm_completion_transformation.transformation import (
            LiteLLMCompletionResponsesConfig,
        )
        from litellm.responses.streaming_iterator import build_synthetic_response_events

        self._config = LiteLLMCompletionResponsesConfig
        self._events = build_synthetic_response_events
        self._unreadable = unreadable()

    def parse(self, body: JsonObject) -> Request:
        given = body.get("input")
        if not isinstance(given, str | list) or not given:
            raise BadRequest("input: must be a non-empty string or list")
        if body.get("previous_response_id"):
            raise BadRequest(
                "previous_response_id: the gateway keeps no responses; send the whole input"
            )
        max_tokens = positive_int(body, "max_output_tokens")
        try:
            chat = self._config.transform_responses_api_request_to_chat_completion_request(
                model=model_name(body), input=given, responses_api_request=_parameters(body)
            )
        except self._unreadable as exc:
            raise BadRequest(f"input: cannot be read as a Responses input: {exc}") from exc
        return translated(body, "input", chat, max_tokens)

    def answer(self, request: Request, reply: Reply) -> JsonObject:
        return to_jsonable_python(self._response(request, reply), by_alias=False)

    def stream(self, request: Request, reply: Reply) -> Iterator[bytes]:
        """litellm's events, each named by its ``type`` and written as JSON by pydantic itself
        (half the cost of dumping it and encoding that). Its last, ``response.completed``
        whatever the response's status, is ``response.incomplete`` for a response cut at its
        token limit, as the Responses API names it (a client reading ``completed`` takes half an
        answer for the whole)."""
        events: Iterable[Any] = self._events(
            transformed=self._response(request, reply), logging_obj=None, chunk_size=sys.maxsize
        )
        for event in events:
            kind = str(getattr(event.type, "value", event.type))
            if kind == "response.completed" and event.response.status == "incomplete":
                kind = "response.incomplete"
                event = event.model_copy(update={"type": kind})
            yield sse(event.model_dump_json(), event=kind)

    def _response(self, request: Request, reply: Reply) -> Any:
        """The reply as litellm's ``ResponsesAPIResponse`` to ``request``."""
        return self._config.transform_chat_completion_response_to_responses_api_response(
            request_input=request.body["input"],
            responses_api_request=_parameters(request.body),
            chat_completion_response=model_response(reply, request.model),
        )


def _parameters(body: JsonObject) -> Any:
    return {key: value for key, value in body.items() if key not in _NOT_PARAMETERS}
