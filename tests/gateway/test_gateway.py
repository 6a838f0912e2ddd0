"""The gateway over real HTTP: the per-run token, its bounds, and chat completions."""

from __future__ import annotations

import http.client
import json
import select
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import ScriptedModel, ToolCall
from harness.gateway import Gateway, ServerLimits
from harness.gateway.chat import ChatWire
from harness.gateway.gateway import WIRES
from harness.models.litellm_model import LiteLLMModel
from tests.openai_server import NoChoice, Text

TOKEN = "harness-test-token"
CHAT = {"model": "gpt-x", "messages": [{"role": "user", "content": "hi"}]}


def post(
    gateway: Gateway, path: str, body: object, token: str = TOKEN, **headers: str
) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=10)
    data = json.dumps(body).encode()
    connection.request("POST", path, data, {"Authorization": f"Bearer {token}", **headers})
    response = connection.getresponse()
    answer = response.status, response.read()
    connection.close()
    return answer


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel(["hello", ToolCall("run", {"cmd": "ls"}, id="call_7"), "third"])


@pytest.fixture
def gateway(model: ScriptedModel) -> Iterator[Gateway]:
    limits = ServerLimits(
        connections=3, read_timeout=0.5, head_seconds=1, body_seconds=2, body_bytes=4096
    )
    with Gateway(model, token=TOKEN, limits=limits) as served:
        yield served


def test_a_chat_request_is_answered_by_the_model_in_chat_form(
    gateway: Gateway, model: ScriptedModel
) -> None:
    status, body = post(gateway, "/v1/chat/completions", CHAT)
    assert status == 200
    answer = json.loads(body)
    assert answer["object"] == "chat.completion"
    assert answer["model"] == "gpt-x"
    assert answer["choices"][0]["message"] == {"role": "assistant", "content": "hello"}
    assert answer["choices"][0]["finish_reason"] == "stop"
    assert answer["usage"]["total_tokens"] > 0
    status, body = post(gateway, "/v1/chat/completions", {**CHAT, "max_tokens": 20})
    message = json.loads(body)["choices"][0]
    assert message["finish_reason"] == "tool_calls"
    assert message["message"]["tool_calls"] == [
        {
            "id": "call_7",
            "type": "function",
            "function": {"name": "run", "arguments": '{"cmd": "ls"}'},
        }
    ]
    assert [call.messages for call in model.calls] == [CHAT["messages"]] * 2
    assert gateway.requests == 2


def test_another_token_is_refused_with_401_and_never_reaches_the_model(
    gateway: Gateway, model: ScriptedModel
) -> None:
    for token in ("", "harness-test-toke", TOKEN + "x", "sk-real-provider-key"):
        status, body = post(gateway, "/v1/chat/completions", CHAT, token=token)
        assert status == 401
        assert "this run's token" in json.loads(body)["error"]["message"]
    status, _ = post(gateway, "/v1/chat/completions", CHAT, token="", **{"x-api-key": TOKEN})
    assert status == 200
    assert len(model.calls) == 1


def test_a_bad_body_or_path_is_refused_naming_what_is_wrong(
    gateway: Gateway, model: ScriptedModel
) -> None:
    status, body = post(gateway, "/v1/chat/completions", {"model": "x", "messages": []})
    assert (status, json.loads(body)["error"]["message"]) == (
        400, "messages: must be a non-empty list",
    )  # fmt: skip
    status, body = post(gateway, "/v1/chat/completions", {**CHAT, "max_tokens": 0})
    assert json.loads(body)["error"]["message"] == "max_tokens: must be a positive integer, got 0"
    status, _ = post(gateway, "/v1/nothing", CHAT)
    assert status == 404
    assert model.calls == []


def test_a_body_over_the_cap_is_refused_with_413_unread(gateway: Gateway) -> None:
    big = {**CHAT, "messages": [{"role": "user", "content": "x" * 5000}]}
    status, _ = post(gateway, "/v1/chat/completions", big)
    assert status == 413
    status, _ = post(gateway, "/v1/chat/completions", {**CHAT, "pad": "y" * 3900})
    assert status == 200  # under the cap of 4096 bytes


def raw(gateway: Gateway) -> socket.socket:
    return socket.create_connection(("127.0.0.1", gateway.port), timeout=5)


def test_a_slow_client_is_cut_off_and_cannot_hold_the_gateway(gateway: Gateway) -> None:
    idle = raw(gateway)
    started = time.monotonic()
    assert idle.recv(100) == b""  # no request line within the read timeout: closed
    assert time.monotonic() - started < 3
    trickle = raw(gateway)
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
        "Content-Length: 1000\r\n\r\n"
    )
    trickle.sendall(head.encode())
    started = time.monotonic()
    answer = b""
    while b"\r\n\r\n" not in answer:  # a byte every 0.3 s: under the read timeout, never done
        trickle.sendall(b"x")
        time.sleep(0.3)
        answer += trickle.recv(1000, socket.MSG_DONTWAIT) if _ready(trickle) else b""
        assert time.monotonic() - started < 5
    assert answer.startswith(b"HTTP/1.1 408")


@pytest.mark.parametrize("cut", [10, 40, 80], ids=["request line", "a header", "blank line"])
def test_a_head_fed_slowly_is_cut_off_at_its_deadline_and_reaches_no_model(
    gateway: Gateway, model: ScriptedModel, cut: int
) -> None:
    """A byte every 0.2 s (under the read timeout) of the request line, a header or the blank
    line that ends the head: answered 408 once the head has taken a second, and closed."""
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nAuthorization: Bearer {TOKEN}\r\n"
        "Content-Length: 2\r\n\r\n{}"
    ).encode()
    trickle = raw(gateway)
    trickle.sendall(head[:cut])
    started = time.monotonic()
    answer = b""
    for byte in head[cut : len(head) - 3]:  # never the whole head
        if select.select([trickle], [], [], 0)[0]:
            answer = trickle.recv(1000)
            break
        trickle.sendall(bytes([byte]))
        time.sleep(0.2)
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert b"the head was not whole within 1s, or stopped arriving for 0.5s" in answer
    assert 0.9 <= time.monotonic() - started < 4  # from the first byte the server saw
    assert trickle.recv(1000) == b""  # closed
    assert model.calls == []
    assert post(gateway, "/v1/chat/completions", CHAT)[0] == 200  # the gateway serves on


def test_a_head_over_its_cap_is_refused_with_431(gateway: Gateway) -> None:
    client = raw(gateway)
    client.sendall(b"GET /v1/models HTTP/1.1\r\nX-Pad: " + b"p" * 70_000)
    assert client.recv(1000).startswith(b"HTTP/1.1 431 ")


def test_a_body_sent_with_its_head_is_read_whole_and_the_next_request_on_it_too(
    gateway: Gateway,
) -> None:
    """Two requests in one write: the second head is not eaten by the first body."""
    body = json.dumps(CHAT).encode()
    one = (
        f"POST /v1/chat/completions HTTP/1.1\r\nAuthorization: Bearer {TOKEN}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    client = raw(gateway)
    client.sendall(one + one)
    answer = b""
    while answer.count(b"HTTP/1.1 200 ") < 2:
        part = client.recv(65536)
        assert part, answer
        answer += part
    assert b'"content":"hello"' in answer.replace(b" ", b"")


def _ready(sock: socket.socket) -> bool:
    try:
        return bool(sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
    except BlockingIOError:
        return False


def test_connections_past_the_cap_are_answered_503_and_served_again_once_freed(
    gateway: Gateway,
) -> None:
    held = [raw(gateway) for _ in range(3)]
    time.sleep(0.1)
    extra = raw(gateway)
    assert extra.recv(100).startswith(b"HTTP/1.1 503")
    for sock in held:
        sock.close()
    time.sleep(0.2)
    status, _ = post(gateway, "/v1/chat/completions", CHAT)
    assert status == 200


def test_each_answer_leaves_in_one_write_on_a_kept_alive_connection(gateway: Gateway) -> None:
    """Headers and body together: a body sent after its headers would wait for the client's
    delayed acknowledgement of them (some 40 ms a request, the connection kept alive)."""
    data = json.dumps(CHAT).encode()
    request = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nx-api-key: {TOKEN}\r\n"
        f"Content-Length: {len(data)}\r\n\r\n"
    ).encode() + data
    with raw(gateway) as client:
        for _ in range(3):
            client.sendall(request)
            first = client.recv(65536)  # what arrived first: the whole answer
            head, _, body = first.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200 OK\r\n")
            length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
            assert len(body) == length > 0
            assert json.loads(body)["object"] == "chat.completion"


def test_a_streamed_chat_answer_is_server_sent_events_ending_in_done(gateway: Gateway) -> None:
    post(gateway, "/v1/chat/completions", CHAT)
    status, body = post(gateway, "/v1/chat/completions", {**CHAT, "stream": True})
    assert status == 200
    events = [line.removeprefix("data: ") for line in body.decode().split("\n\n") if line]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(event) for event in events[:-1]]
    assert {chunk["object"] for chunk in chunks} == {"chat.completion.chunk"}
    assert chunks[1]["choices"][0]["delta"]["tool_calls"][0]["function"]["name"] == "run"
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["usage"]["prompt_tokens"] > 0


def test_a_unix_socket_gateway_takes_the_same_requests(
    tmp_path: Path, model: ScriptedModel
) -> None:
    path = tmp_path / "gateway.sock"
    with Gateway(model, token=TOKEN, socket_path=path):
        client = socket.socket(socket.AF_UNIX)
        client.connect(str(path))
        data = json.dumps(CHAT).encode()
        client.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            + f"x-api-key: {TOKEN}\r\nContent-Length: {len(data)}\r\n\r\n".encode()
            + data
        )
        answer = b""
        while part := client.recv(65536):
            answer += part
        assert answer.startswith(b"HTTP/1.1 200")
        assert b'"content":"hello"' in answer
    assert not path.exists()


def test_models_lists_the_run_s_model_and_an_ended_session_takes_no_more_requests(
    model: ScriptedModel,
) -> None:
    with Gateway(model, token=TOKEN, max_requests=1) as served:
        connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=10)
        connection.request("GET", "/v1/models", headers={"Authorization": f"Bearer {TOKEN}"})
        listed = json.loads(connection.getresponse().read())
        assert [entry["id"] for entry in listed["data"]] == ["scripted"]
        assert post(served, "/v1/chat/completions", CHAT)[0] == 200
        assert not served.ended.is_set()
        status, body = post(served, "/v1/chat/completions", CHAT)
        assert (status, json.loads(body)["error"]["message"]) == (
            400, "request cap of 1 model requests reached",
        )  # fmt: skip
        assert served.ended.is_set()
        assert served.ending is not None
        assert served.ending.reason == "requests"
        status, body = post(served, "/v1/chat/completions", CHAT)
        assert json.loads(body)["error"]["message"].startswith("the session has ended: ")
    assert len(model.calls) == 1
    assert served.requests == 1


def _exchange(gateway: Gateway, data: bytes) -> bytes:
    """``data`` sent on a fresh connection, and all the gateway answers until it closes."""
    with raw(gateway) as client:
        client.sendall(data)
        answer = b""
        while part := client.recv(65536):
            answer += part
    return answer


def test_http_is_read_as_clients_send_it_and_anything_else_is_refused(gateway: Gateway) -> None:
    data = json.dumps(CHAT).encode()
    head = f"POST /v1/chat/completions HTTP/1.1\r\nx-api-key: {TOKEN}\r\n"
    waiting = (head + f"Expect: 100-continue\r\nContent-Length: {len(data)}\r\n\r\n").encode()
    with raw(gateway) as client:  # the interim answer first, then the answer to the body
        client.sendall(waiting)
        assert client.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
        client.sendall(data)
        assert client.recv(65536).startswith(b"HTTP/1.1 200 OK\r\n")
    old = f"POST /v1/chat/completions HTTP/1.0\r\nx-api-key: {TOKEN}\r\n"
    answer = _exchange(gateway, (old + f"Content-Length: {len(data)}\r\n\r\n").encode() + data)
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n")  # then closed: HTTP/1.0 keeps nothing alive
    assert answer.partition(b"\r\n\r\n")[0].endswith(b"\r\nConnection: close")
    assert _exchange(gateway, b"NONSENSE\r\n\r\n").startswith(b"HTTP/1.1 400 Bad Request\r\n")
    many = head + "".join(f"x-{n}: {n}\r\n" for n in range(120)) + "\r\n"
    assert _exchange(gateway, many.encode()).startswith(b"HTTP/1.1 431 ")
    assert _exchange(gateway, f"PUT /v1/models HTTP/1.1\r\nx-api-key: {TOKEN}\r\n"
                     "Connection: close\r\n\r\n".encode()).startswith(b"HTTP/1.1 501 ")  # fmt: skip


class CountedWire(ChatWire):
    """The chat wire, counting how often it is made and by which thread."""

    made: list[str] = []
    ready = threading.Event()

    def __init__(self) -> None:
        CountedWire.made.append(threading.current_thread().name)
        CountedWire.ready.set()


def test_a_preloaded_endpoint_s_wire_is_made_as_the_gateway_starts_and_only_once(
    model: ScriptedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(WIRES, "/counted", f"{__name__}:CountedWire")
    monkeypatch.setattr(CountedWire, "made", [])
    with Gateway(model, token=TOKEN) as lazy:  # not preloaded: made by the first request
        time.sleep(0.2)
        assert CountedWire.made == []
        assert post(lazy, "/v1/counted", CHAT)[0] == 200
    assert len(CountedWire.made) == 1
    CountedWire.made.clear()
    CountedWire.ready.clear()
    with Gateway(model, token=TOKEN, preload=["/counted"]) as gateway:
        assert CountedWire.ready.wait(10)  # made with no request, beside the server
        assert CountedWire.made != [threading.current_thread().name]
        for _ in range(2):
            assert post(gateway, "/v1/counted", CHAT)[0] == 200
    assert len(CountedWire.made) == 1


def test_a_provider_answer_that_cannot_be_read_is_a_502_and_ends_the_session() -> None:
    with NoChoice(deadline=60) as provider:
        provider.queue(Text("hi"), Text("hi"))
        model = LiteLLMModel(
            "openai/test-model", api_base=provider.api_base, api_key="sk-test", num_retries=0
        )
        with Gateway(model, token=TOKEN) as gateway:
            status, body = post(gateway, "/v1/chat/completions", CHAT)
            again = post(gateway, "/v1/chat/completions", CHAT)
        sent = len(provider.requests)
    assert status == 502
    assert json.loads(body)["error"]["message"] == (
        "model error: model openai/test-model: server error: its answer could not be read "
        "(IndexError: list index out of range); not sent again, it may have been paid for"
    )
    assert gateway.ending is not None
    assert gateway.ending.reason == "error"
    assert again[0] == 400
    assert b"the session has ended" in again[1]
    assert sent == 1
