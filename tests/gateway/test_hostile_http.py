"""The gateway against an agent that attacks it over HTTP, on real sockets: requests framed to
be read two ways, its token spelled around, its caps spelled around (counts, the request cap),
and bodies made to exhaust it. Each test asserts the exact answers, in order."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from harness import ScriptedModel
from harness.gateway import Gateway
from harness.gateway.chat import ChatWire
from harness.gateway.gateway import WIRES
from harness.gateway.wire import Request
from harness.models.base import Message, Reply, ToolSchema
from tests.gateway.hostile import CHAT, LIMITS, MODELS, TOKEN, exchange, request, statuses


@pytest.fixture
def answering() -> Iterator[Gateway]:
    with Gateway(ScriptedModel(["ok"] * 20), token=TOKEN, limits=LIMITS) as gateway:
        yield gateway


@pytest.mark.parametrize(
    ("head", "status"),
    [
        ("Content-Length: {n}\r\nContent-Length: 3", 400),  # given twice: which one?
        ("Content-Length: 3\r\nContent-Length: {n}", 400),
        ("Content-Length : {n}", 400),  # a space before the colon
        ("X-Pad: a\r\n Content-Length: {n}", 400),  # folded onto the line before
        ("Content-Length: {n}\r\nX-No-Colon", 400),
        ("Content-Length: +{n}", 411),  # int() takes these; HTTP does not
        ("Content-Length: {n}\r\nTransfer-Encoding: gzip", 411),
        ("Content-Length: 1_0", 411),
    ],
    ids=["length twice", "length twice, other order", "space in name", "folded line",
         "no colon", "signed length", "transfer-encoding", "underscored length"],
)  # fmt: skip
def test_a_head_that_could_be_read_two_ways_is_refused_and_nothing_after_it_is_read(
    answering: Gateway, head: str, status: int
) -> None:
    data = json.dumps(CHAT).encode()
    line = f"POST /v1/chat/completions HTTP/1.1\r\nx-api-key: {TOKEN}\r\n"
    smuggled = (line + head.format(n=len(data)) + "\r\n\r\n").encode() + data + MODELS
    answer = exchange(answering, smuggled)
    assert statuses(answer) == [status]
    assert b'"object":"list"' not in answer
    assert answering.requests == 0


@pytest.mark.parametrize("method", ["GET", "PUT"])
def test_a_body_sent_with_a_get_or_an_unknown_method_is_never_read_as_a_request(
    answering: Gateway, method: str
) -> None:
    inside = MODELS.replace(b"Connection: close\r\n", b"")
    head = f"{method} /v1/models HTTP/1.1\r\nx-api-key: {TOKEN}\r\n"
    answer = exchange(answering, f"{head}Content-Length: {len(inside)}\r\n\r\n".encode() + inside
                      + MODELS)  # fmt: skip
    if method == "GET":  # its body read and left aside; the request after it answered
        assert statuses(answer) == [200, 200]
    else:  # refused before its token is read, so its body is not: the connection is closed
        assert statuses(answer) == [501]
    assert answer.count(b'"object":"list"') == (2 if method == "GET" else 0)


def test_pipelined_requests_are_each_answered_and_one_refused_ends_the_connection(
    answering: Gateway,
) -> None:
    kept = request(CHAT, close=False)
    assert statuses(exchange(answering, kept + kept + MODELS)) == [200, 200, 200]
    refused = request(CHAT, close=False, token="harness-not-this-run")
    assert statuses(exchange(answering, refused + kept + MODELS)) == [401]
    assert answering.requests == 2


def depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    return 0


def nested_schema(wire: str, levels: int) -> tuple[str, dict[str, object]]:
    """A request of ``wire`` whose one tool's schema makes the body ``levels`` deep."""

    def body(inner: object) -> tuple[str, dict[str, object]]:
        schema = {"type": "object", "x": inner}
        if wire == "chat":
            return "/v1/chat/completions", {
                **CHAT,
                "tools": [{"type": "function", "function": {"name": "f", "parameters": schema}}],
            }
        if wire == "anthropic":
            return "/v1/messages", {
                **CHAT,
                "max_tokens": 5,
                "tools": [{"name": "f", "input_schema": schema}],
            }
        return "/v1/responses", {"model": "m", "input": "hi", "tools": [
            {"type": "function", "name": "f", "parameters": schema}]}  # fmt: skip

    inner: object = "x"
    for _ in range(levels - depth(body(inner)[1])):  # each list one level more
        inner = [inner]
    return body(inner)


@pytest.mark.parametrize("wire", ["chat", "anthropic", "responses"])
def test_a_body_nested_past_64_levels_is_refused_before_the_model_and_64_are_answered(
    wire: str,
) -> None:
    """Deeper, the redactor's walk or the answer's (pydantic's, echoing a Responses request's
    tools) ran out of stack: the connection was dropped unanswered, after the model was paid."""
    inner = ScriptedModel(["ok"])
    with Gateway(inner, token=TOKEN, limits=LIMITS) as gateway:
        refused = [exchange(gateway, request(*reversed(nested_schema(wire, levels))))
                   for levels in (65, 500)]  # fmt: skip
        answered = exchange(gateway, request(*reversed(nested_schema(wire, 64))))
    for answer in refused:
        assert statuses(answer) == [400]
        assert b"the body may be nested at most 64 levels deep" in answer
    assert statuses(answered) == [200]
    assert len(inner.calls) == 1
    assert gateway.requests == 1


@pytest.mark.parametrize(
    "number", [b"1" * 1_000_000, b"1e999999", b"-1e999999", b"NaN", b"Infinity", b"1" * 30]
)
def test_a_number_json_cannot_hold_is_refused_with_400_before_the_model(
    answering: Gateway, number: bytes
) -> None:
    data = b'{"model":"m","max_tokens":' + number + b',"messages":[{"role":"user","content":"hi"}]}'
    head = f"POST /v1/chat/completions HTTP/1.1\r\nx-api-key: {TOKEN}\r\nConnection: close\r\n"
    answer = exchange(answering, f"{head}Content-Length: {len(data)}\r\n\r\n".encode() + data)
    assert statuses(answer) == [400]
    assert answering.requests == 0


class SlowCounting(ScriptedModel):
    """A model whose count takes a while (as a large body's does), noting how many run at once."""

    def __init__(self) -> None:
        super().__init__(["ok"])
        self.running = 0
        self.most = 0
        self.counts = 0
        self._lock = threading.Lock()

    def count_tokens(self, messages: list[Message], tools: list[ToolSchema] | None = None) -> int:
        with self._lock:
            self.running += 1
            self.most = max(self.most, self.running)
            self.counts += 1
        time.sleep(0.05)
        with self._lock:
            self.running -= 1
        return 7


def test_counts_run_one_at_a_time_and_none_after_the_session_ended() -> None:
    """A count of a 30 MB body takes some 25 s of the harness's CPU and is no model request: 16
    connections counting at once held every core, for as long as the agent liked."""
    model = SlowCounting()
    count = request({**CHAT, "max_tokens": 5}, "/v1/messages/count_tokens")
    with Gateway(model, token=TOKEN, limits=LIMITS, max_requests=1) as gateway:
        answers: list[bytes] = []
        threads = [threading.Thread(target=lambda: answers.append(exchange(gateway, count)))
                   for _ in range(4)]  # fmt: skip
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert [statuses(answer) for answer in answers] == [[200]] * 4
        assert (model.counts, model.most) == (4, 1)
        assert statuses(exchange(gateway, request(CHAT))) == [200]
        assert statuses(exchange(gateway, count)) == [200]  # the cap is for model requests
        assert statuses(exchange(gateway, request(CHAT))) == [400]  # past the cap: ended
        counted = model.counts
        ended = exchange(gateway, count)
    assert statuses(ended) == [400]
    assert b"the session has ended: request cap of 1 model requests reached" in ended
    assert model.counts == counted  # refused uncounted
    assert gateway.requests == 1


@pytest.mark.parametrize(
    "credentials",
    [
        "",  # none
        "Authorization: Bearer \r\n",  # empty
        f"Authorization: bearer{TOKEN}\r\n",
        f"Authorization: Basic {TOKEN}\r\n",
        f"Authorization: Bearer {TOKEN}x\r\n",
        f"Authorization: Bearer {TOKEN[:-1]}\r\n",
        f"x-api-key: wrong\r\nAuthorization: Bearer {TOKEN}\r\n",  # x-api-key is read first
        f"x-api-key: {TOKEN.upper()}\r\n",
        f"x-api-key: {TOKEN}\x00\r\n",
    ],
)
@pytest.mark.parametrize(
    "line",
    [
        "GET /v1/models",
        f"GET /v1/models?key={TOKEN}&api_key={TOKEN}&token={TOKEN}",
        "POST /v1/messages/count_tokens",
        "POST /v1/chat/completions",
        "POST /v1/nothing",
    ],
)
def test_no_endpoint_answers_without_the_token_in_its_header(
    answering: Gateway, credentials: str, line: str
) -> None:
    data = json.dumps({**CHAT, "max_tokens": 5}).encode()
    head = f"{line} HTTP/1.1\r\n{credentials}Content-Length: {len(data)}\r\n\r\n"
    answer = exchange(answering, head.encode() + data + MODELS)
    assert statuses(answer) == [401]
    assert b"this run's token" in answer
    assert answering.requests == 0


@pytest.mark.parametrize(
    "credentials",
    [f"Authorization: Bearer {TOKEN}", f"Authorization: Bearer   {TOKEN}  ", f"x-api-key: {TOKEN}",
     f"Authorization: bearer {TOKEN}", f"Authorization: BEARER {TOKEN}",
     f"x-api-key: {TOKEN}\r\nAuthorization: Bearer other", f"x-api-key:\r\nAuthorization: Bearer {TOKEN}"],
)  # fmt: skip
def test_the_token_is_taken_from_either_header_and_nothing_else(
    answering: Gateway, credentials: str
) -> None:
    assert statuses(exchange(answering, MODELS.replace(b"x-api-key: " + TOKEN.encode(),
                                                       credentials.encode()))) == [200]  # fmt: skip


def test_requests_racing_on_many_connections_get_exactly_the_cap_whole_or_streamed() -> None:
    model = ScriptedModel(["ok"] * 12)
    with Gateway(model, token=TOKEN, limits=LIMITS, max_requests=3) as gateway:
        answers: list[bytes] = []
        threads = [
            threading.Thread(target=lambda n=n: answers.append(
                exchange(gateway, request({**CHAT, "stream": n % 2 == 0}))))
            for n in range(8)
        ]  # fmt: skip
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert (
        sorted(status for answer in answers for status in statuses(answer)) == [200] * 3 + [400] * 5
    )
    assert len(model.calls) == 3
    assert gateway.requests == 3
    assert gateway.ending is not None
    assert gateway.ending.reason == "requests"


@pytest.mark.parametrize(
    ("path", "body", "said"),
    [
        ("/v1/chat/completions", {**CHAT, "messages": [
            *CHAT["messages"], {"role": "assistant", "content": None, "tool_calls": calls}]},
         "messages[1].tool_calls: must be a list of function calls")
        for calls in (5, {"a": 1}, [5], [None], [{"function": "f"}])
    ] + [
        ("/v1/responses", {"model": "m", "input": [
            {"role": "user", "content": [{"type": "image_url", "image_url": 5}]}]},
         "input: cannot be read as a Responses input: "),
        ("/v1/chat/completions", {**CHAT, "messages": [{"role": "user", "content": "hi",
                                                        "name": {"a": []}}]},
         "messages[0].name: must be a string"),
        ("/v1/messages", {**CHAT, "max_tokens": 5, "tools": [
            {"name": "f", "input_schema": {"type": "object"}, "eager_input_streaming": "x"}]},
         "messages: cannot be read as Anthropic messages: "),
    ],
    ids=["calls a number", "calls an object", "a call a number", "a call null",
         "a function a string", "media litellm cannot place", "a name an object",
         "a tool's field of the wrong type"],
)  # fmt: skip
def test_a_request_of_a_shape_no_wire_reads_is_answered_400_not_dropped(
    answering: Gateway, path: str, body: dict[str, object], said: str
) -> None:
    """Each of these raised past the gateway (the token count's walk of the tool calls or its
    cache of names, litellm's own BadRequestError): the connection was dropped unanswered."""
    answer = exchange(answering, request(body, path))
    assert statuses(answer) == [400]
    assert json.loads(answer.partition(b"\r\n\r\n")[2])["error"]["message"].startswith(said)
    assert answering.requests == 0


class Watched(ChatWire):
    """The chat wire, noting how many bodies it reads at once."""

    reading = 0
    most = 0
    lock = threading.Lock()

    def parse(self, body: dict[str, Any]) -> Request:
        with Watched.lock:
            Watched.reading += 1
            Watched.most = max(Watched.most, Watched.reading)
        time.sleep(0.02)
        try:
            return super().parse(body)
        finally:
            with Watched.lock:
                Watched.reading -= 1


class Overlapped(ScriptedModel):
    """A model noting whether a body was being read while it was asked."""

    def __init__(self) -> None:
        super().__init__(["ok"] * 6)
        self.overlapped = False

    def complete(
        self,
        messages: list[Message],
        tools: list[ToolSchema] | None = None,
        *,
        max_tokens: int | None = None,
    ) -> Reply:
        time.sleep(0.02)
        self.overlapped = self.overlapped or Watched.reading > 0
        return super().complete(messages, tools, max_tokens=max_tokens)


def test_bodies_are_read_one_at_a_time_and_never_beside_a_model_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A body's objects take up to some 30 times its bytes (32 MB of empty lists: 0.9 GB):
    read on 16 connections at once, they held the harness's memory many times over."""
    monkeypatch.setitem(WIRES, "/watched", f"{__name__}:Watched")
    monkeypatch.setattr(Watched, "most", 0)
    model = Overlapped()
    with Gateway(model, token=TOKEN, limits=LIMITS) as gateway:
        answers: list[bytes] = []
        threads = [threading.Thread(target=lambda: answers.append(
            exchange(gateway, request(CHAT, "/v1/watched")))) for _ in range(4)]  # fmt: skip
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert [statuses(answer) for answer in answers] == [[200]] * 4
    assert (Watched.most, model.overlapped) == (1, False)
