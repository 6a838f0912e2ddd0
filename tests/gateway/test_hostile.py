"""The gateway against an agent that attacks it, over real sockets, by class: secrets leaving
through its answers, requests framed to be read two ways, its token spelled around, its caps
spelled around, and bodies made to exhaust it. Each test asserts the exact answer and that no
byte of any answer carries a secret."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from harness import ScriptedModel, ToolCall
from harness.core.redact import Redactor
from harness.gateway import Gateway, ServerLimits
from harness.models.base import Message, ModelError, Reply, ToolSchema
from harness.models.budget import MeteredModel

TOKEN = "harness-hostile-token"
SECRET = "tok-" + "Zq4" * 10
"""The run's secret, known to the redactor by value (no pattern finds it)."""
KEY = "sk-" + "a1B2" * 8
"""A provider key, found by the redactor's patterns."""
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
LIMITS = ServerLimits(connections=4, read_timeout=0.5, head_seconds=1, body_seconds=2)


def redacting(model: ScriptedModel) -> MeteredModel:
    return MeteredModel(model, redact=Redactor(values=[SECRET]).redact_text)


def exchange(gateway: Gateway, data: bytes) -> bytes:
    """``data`` sent on a fresh connection, and every byte answered until the gateway closes it
    (the last request asks it to, or it is refused)."""
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=30) as client:
        client.sendall(data)
        answer = b""
        while part := client.recv(65536):
            answer += part
    return answer


def request(
    body: object, path: str = "/v1/chat/completions", *, close: bool = True, token: str = TOKEN
) -> bytes:
    data = json.dumps(body).encode()
    head = f"POST {path} HTTP/1.1\r\nx-api-key: {token}\r\nContent-Length: {len(data)}\r\n"
    return (head + ("Connection: close\r\n" if close else "") + "\r\n").encode() + data


def statuses(answer: bytes) -> list[int]:
    """The status of each answer in ``answer``, in order."""
    found = []
    while answer:
        assert answer.startswith(b"HTTP/1.1 "), answer
        head, _, rest = answer.partition(b"\r\n\r\n")
        found.append(int(head[9:12]))
        length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
        answer = rest[length:]
    return found


class Failing(ScriptedModel):
    """A model whose provider refuses, naming its URL, its key and its header."""

    def complete(
        self,
        messages: list[Message],
        tools: list[ToolSchema] | None = None,
        *,
        max_tokens: int | None = None,
    ) -> Reply:
        raise ModelError(
            f"401 from https://api.example/v1/chat?key={SECRET}: Authorization: Bearer {SECRET}, "
            f"api_key={KEY}"
        )


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/messages", "/v1/responses"])
def test_a_provider_error_naming_its_key_reaches_the_agent_redacted_and_stays_so(
    path: str,
) -> None:
    body = {**CHAT, "max_tokens": 10} if path == "/v1/messages" else CHAT
    if path == "/v1/responses":
        body = {"model": "m", "input": "hi"}
    with Gateway(redacting(Failing([])), token=TOKEN, limits=LIMITS) as gateway:
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


@pytest.fixture
def saying() -> Iterator[Gateway]:
    """A gateway whose model names the secret in a tool call's name, arguments and id."""
    call = ToolCall(f"sh_{SECRET}", json.dumps({"cmd": f"echo {SECRET}"}), id=f"call_{SECRET}")
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
    assert SECRET.encode() not in answer
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


MODELS = f"GET /v1/models HTTP/1.1\r\nx-api-key: {TOKEN}\r\nConnection: close\r\n\r\n".encode()
"""A request the gateway answers 200 with no model call: smuggled inside another, it would be."""


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
     f"x-api-key: {TOKEN}\r\nAuthorization: Bearer other", f"x-api-key:\r\nAuthorization: Bearer {TOKEN}"],
)  # fmt: skip
def test_the_token_is_taken_from_either_header_and_nothing_else(
    answering: Gateway, credentials: str
) -> None:
    assert statuses(exchange(answering, MODELS.replace(b"x-api-key: " + TOKEN.encode(),
                                                       credentials.encode()))) == [200]  # fmt: skip
