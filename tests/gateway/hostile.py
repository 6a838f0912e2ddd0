"""What the tests of the gateway against a hostile agent share: a run's secret, the raw
requests, and the exchange of bytes over a real socket."""

from __future__ import annotations

import json
import socket

from harness import ScriptedModel
from harness.core.redact import Redactor
from harness.gateway import Gateway, ServerLimits
from harness.models.budget import MeteredModel

TOKEN = "harness-hostile-token"
SECRET = "tok-" + "Zq4" * 10
"""The run's secret, known to the redactor by value (no pattern finds it)."""
KEY = "sk-" + "a1B2" * 8
"""A provider key, found by the redactor's patterns."""
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
LIMITS = ServerLimits(connections=16, read_timeout=5, head_seconds=5, body_seconds=10)
"""Bounds no test here reaches: every request is whole, and asks to close or is refused."""


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


MODELS = f"GET /v1/models HTTP/1.1\r\nx-api-key: {TOKEN}\r\nConnection: close\r\n\r\n".encode()
"""A request the gateway answers 200 with no model call: smuggled inside another, it would be."""
