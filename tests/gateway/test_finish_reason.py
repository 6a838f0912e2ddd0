"""A reply cut at its token limit is said to be cut, in each wire's own words, whole and
streamed: an agent that reads ``stop`` or ``end_turn`` takes half an answer for the whole."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from harness.gateway import Gateway
from harness.models.litellm_model import LiteLLMModel
from tests.gateway.test_wires import ANTHROPIC, RESPONSES, TOKEN, events, post
from tests.openai_server import OpenAIServer, Text

CHAT = {"model": "gpt-x", "messages": [{"role": "user", "content": "write it all"}]}


@pytest.fixture
def gateway() -> Iterator[tuple[Gateway, OpenAIServer]]:
    """A gateway whose model is asked through litellm, of a provider whose first two answers
    are cut at their token limit and whose third is whole."""
    with OpenAIServer(deadline=60) as provider:
        provider.queue(Text("half an ans", finish="length"), Text("half an ans", finish="length"),
                       Text("all of it"))  # fmt: skip
        model = LiteLLMModel(
            "openai/test-model", api_base=provider.api_base, api_key="sk-test", num_retries=0
        )
        with Gateway(model, token=TOKEN) as served:
            yield served, provider


def _chat(text: str, stream: bool) -> str | None:
    if not stream:
        return json.loads(text)["choices"][0]["finish_reason"]
    chunks = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: {")]
    return next(
        c["choices"][0]["finish_reason"] for c in chunks if c["choices"][0]["finish_reason"]
    )


def _anthropic(text: str, stream: bool) -> str | None:
    if not stream:
        return json.loads(text)["stop_reason"]
    (delta,) = [data for name, data in events(text) if name == "message_delta"]
    return delta["delta"]["stop_reason"]  # type: ignore[index]


def _responses(text: str, stream: bool) -> tuple[str, object]:
    if not stream:
        answer = json.loads(text)
        return answer["status"], answer["incomplete_details"]
    name, last = events(text)[-1]
    assert name == last["type"]  # the event's name and its type agree
    return name, last["response"]["incomplete_details"]  # type: ignore[index]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_reply_cut_at_its_token_limit_is_said_to_be_cut_in_every_wire(
    gateway: tuple[Gateway, OpenAIServer], stream: bool
) -> None:
    served, _ = gateway
    status, chat = post(served, "/v1/chat/completions", {**CHAT, "stream": stream})
    assert status == 200, chat
    assert _chat(chat, stream) == "length"
    status, anthropic = post(served, "/v1/messages", {**ANTHROPIC, "stream": stream})
    assert status == 200, anthropic
    assert _anthropic(anthropic, stream) == "max_tokens"
    status, whole = post(served, "/v1/chat/completions", {**CHAT, "stream": stream})
    assert _chat(whole, stream) == "stop"  # a reply the model ended is not said to be cut


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_responses_reply_cut_at_its_token_limit_is_incomplete(
    gateway: tuple[Gateway, OpenAIServer], stream: bool
) -> None:
    served, _ = gateway
    said = [_responses(post(served, "/v1/responses", {**RESPONSES, "stream": stream})[1], stream)
            for _ in range(3)]  # fmt: skip
    cut, whole = (
        ("response.incomplete", "response.completed") if stream else ("incomplete", "completed")
    )
    assert said == [(cut, {"reason": "max_output_tokens"})] * 2 + [(whole, None)]
