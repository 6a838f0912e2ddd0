"""The gateway against an agent that attacks it, over real sockets, by class: secrets leaving
through its answers, requests framed to be read two ways, its token spelled around, its caps
spelled around, and bodies made to exhaust it. Each test asserts the exact answer and that no
byte of any answer carries a secret."""

from __future__ import annotations

import json
import socket
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
