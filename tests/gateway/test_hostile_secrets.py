"""The gateway against an agent that attacks it: no secret of the run leaves through its
answers (an error, a reply's text, a tool call's name, arguments or id, whole and streamed, in
every wire), and none the agent puts anywhere in a request reaches the model."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from harness import ScriptedModel, ToolCall
from harness.gateway import Gateway
from harness.models.base import Message, ModelError, Reply, ToolSchema
from tests.gateway.hostile import (
    CHAT,
    KEY,
    LIMITS,
    SECRET,
    TOKEN,
    exchange,
    redacting,
    request,
    statuses,
)


class Raising(ScriptedModel):
    """A model whose every call raises ``error``."""

    def __init__(self, error: Exception) -> None:
        super().__init__([])
        self.error = error

    def complete(
        self,
        messages: list[Message],
        tools: list[ToolSchema] | None = None,
        *,
        max_tokens: int | None = None,
    ) -> Reply:
        raise self.error


FAILING = ModelError(
    f"401 from https://api.example/v1/chat?key={SECRET}: Authorization: Bearer {SECRET}, "
    f"api_key={KEY}"
)
"""A provider's refusal naming its URL, its key and its header."""


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/messages", "/v1/responses"])
def test_a_provider_error_naming_its_key_reaches_the_agent_redacted_and_stays_so(
    path: str,
) -> None:
    body = {**CHAT, "max_tokens": 10} if path == "/v1/messages" else CHAT
    if path == "/v1/responses":
        body = {"model": "m", "input": "hi"}
    with Gateway(redacting(Raising(FAILING)), token=TOKEN, limits=LIMITS) as gateway:
        first = exchange(gateway, request(body, path))
        again = exchange(gateway, request(body, path))  # the session's end names the error
    assert statuses(first) == [502]
    assert statuses(again) == [400]
    assert b"model error: 401 from https://api.example/v1/chat?key=[REDACTED]" in first
    assert b"the session has ended: 401 from" in again
    for answer in (first, again):
        assert SECRET.encode() not in answer
        assert KEY.encode() not in answer
    assert gateway.ending is not None
    assert gateway.ending.reason == "error"


def test_a_fault_of_the_harness_s_own_is_answered_500_named_and_redacted() -> None:
    """Answered, not a dropped connection; the session is not ended by it (the agent decides
    whether to ask again), and nothing is counted."""
    fault = RuntimeError(f"the record could not be written with key {SECRET}")  # of its own
    with Gateway(redacting(Raising(fault)), token=TOKEN, limits=LIMITS) as gateway:
        first = exchange(gateway, request(CHAT))
        again = exchange(gateway, request(CHAT))
    assert statuses(first) == statuses(again) == [500]
    said = b"the gateway failed: RuntimeError: the record could not be written with key [REDACTED]"
    assert said in first
    assert said in again
    assert SECRET.encode() not in first + again
    assert (gateway.ending, gateway.requests) == (None, 0)


@pytest.fixture
def saying() -> Iterator[Gateway]:
    """A gateway whose model names the secret in a tool call's name, arguments (spelled with a
    JSON escape) and id."""
    escaped = json.dumps({"cmd": f"echo {SECRET}"}).replace("-", "\\u002d")  # tok\u002dZq4...
    call = ToolCall(f"sh_{SECRET}", escaped, id=f"call_{SECRET}")
    with Gateway(redacting(ScriptedModel([call] * 6)), token=TOKEN, limits=LIMITS) as gateway:
        yield gateway


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/messages", "/v1/responses"])
def test_a_secret_in_a_tool_call_s_name_or_id_never_reaches_the_agent(
    saying: Gateway, path: str, stream: bool
) -> None:
    body = {**CHAT, "max_tokens": 10} if path == "/v1/messages" else CHAT
    if path == "/v1/responses":
        body = {"model": "m", "input": "hi"}
    answer = exchange(saying, request({**body, "stream": stream}, path))
    assert statuses(answer) == [200]
    assert SECRET.removeprefix("tok-").encode() not in answer  # in no spelling
    assert b"sh_[REDACTED]" in answer
    assert b"echo [REDACTED]" in answer.replace(b"\\", b"")


def fields_beside_the_text(secret: str) -> dict[str, tuple[str, dict[str, object]]]:
    """A request of each wire holding ``secret`` only where no text is: a message's name and an
    unknown key, a part's extra key, an image's URL, a tool call's name and id, a thinking
    block, a reasoning item's summary."""
    return {
        "chat": ("/v1/chat/completions", {"model": "m", "messages": [
            {"role": "user", "name": secret, "x": {"y": [secret]},
             "content": [{"type": "text", "text": "hi", "x": secret},
                         {"type": "image_url", "image_url": {"url": f"https://x/{secret}"}}]},
            {"role": "assistant", "content": "a", "reasoning_content": secret, "tool_calls": [
                {"id": secret, "type": "function",
                 "function": {"name": f"f{secret}", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": secret, "content": "ok"},
        ]}),
        "anthropic": ("/v1/messages", {"model": "m", "max_tokens": 5, "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": secret, "signature": "s"},
                {"type": "tool_use", "id": f"t{secret}", "name": f"n{secret}", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{secret}",
             "content": [{"type": "image", "source": {"type": "url", "url": f"https://x/{secret}"}}]}]},
        ]}),
        "responses": ("/v1/responses", {"model": "m", "input": [
            {"role": "user", "content": "hi"},
            {"type": "reasoning", "id": "r1", "summary": [{"type": "summary_text", "text": secret}]},
            {"type": "function_call", "call_id": f"c{secret}", "name": f"n{secret}", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"c{secret}", "output": "ok"},
        ]}),
    }  # fmt: skip


@pytest.mark.parametrize("wire", ["chat", "anthropic", "responses"])
def test_a_secret_outside_any_text_of_a_request_never_reaches_the_model(wire: str) -> None:
    inner = ScriptedModel(["ok"])
    path, body = fields_beside_the_text(SECRET)[wire]
    with Gateway(redacting(inner), token=TOKEN, limits=LIMITS) as gateway:
        answer = exchange(gateway, request(body, path))
    assert statuses(answer) == [200]
    [call] = inner.calls
    sent = json.dumps([call.messages, call.tools])
    assert SECRET not in sent
    assert sent.count("[REDACTED]") == {"chat": 8, "anthropic": 6, "responses": 4}[wire]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/messages", "/v1/responses"])
def test_a_reply_holding_a_surrogate_standing_alone_is_answered_with_u_fffd(
    path: str, stream: bool
) -> None:
    """Such a reply (a provider's JSON may spell one, ``\\udc00``) dropped a streamed Responses
    answer's connection after the model was paid: its events are written by pydantic, which
    refuses the surrogate."""
    said = [f"a\udc00 {SECRET}", ToolCall("f\udc00", '{"c": "\ud800"}', id="call_\udc00")]
    body = {**CHAT, "max_tokens": 10} if path == "/v1/messages" else CHAT
    if path == "/v1/responses":
        body = {"model": "m", "input": "hi"}
    with Gateway(redacting(ScriptedModel(said)), token=TOKEN, limits=LIMITS) as gateway:
        answers = [exchange(gateway, request({**body, "stream": stream}, path)) for _ in said]
    assert [statuses(answer) for answer in answers] == [[200], [200]]
    text = b"".join(answers).decode("utf-8")  # every byte UTF-8
    assert "\\ufffd [REDACTED]" in text or "\ufffd [REDACTED]" in text
    assert SECRET not in text
    assert gateway.requests == 2


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_reply_its_wire_cannot_write_is_answered_502_and_the_session_goes_on(
    stream: bool,
) -> None:
    """An Anthropic tool_use's input must be an object: a model's call with arguments that are
    not one dropped the connection unanswered, after the model was asked and paid."""
    said = [ToolCall("f", f"{{bad {SECRET}", id="c1"), ToolCall("f", "[1, 2]", id="c2"), "ok"]
    body = {**CHAT, "max_tokens": 10, "stream": stream}
    with Gateway(redacting(ScriptedModel(said)), token=TOKEN, limits=LIMITS) as gateway:
        answers = [exchange(gateway, request(body, "/v1/messages")) for _ in said]
    assert [statuses(answer) for answer in answers] == [[502], [502], [200]]
    for answer in answers[:2]:
        error = json.loads(answer.partition(b"\r\n\r\n")[2])["error"]
        assert error["type"] == "api_error"
        assert error["message"].startswith(
            "the model's reply cannot be written in this endpoint's form: "
        )
    assert b"{bad [REDACTED]" in answers[0]
    assert SECRET.encode() not in b"".join(answers)
    assert gateway.requests == 3
    assert gateway.ending is None
