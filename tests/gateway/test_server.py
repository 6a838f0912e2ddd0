"""The gateway's HTTP server over real sockets: each bound at its edge, what closes a connection
and what keeps it open, the connection cap, and the server's own start and stop."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.gateway.server import (
    Admit,
    Answer,
    BoundedServer,
    Response,
    ServerLimits,
    json_response,
)

Served = tuple[BoundedServer, list[str]]


def _echo(answered: list[str]) -> tuple[Answer, Admit]:
    def answer(method: str, path: str, headers: dict[str, str], body: bytes) -> Response:
        answered.append(path)
        return json_response(200, {"method": method, "path": path, "body": body.decode()})

    def admit(path: str, headers: dict[str, str]) -> Response | None:
        return json_response(401, {"refused": path}) if path.startswith("/refused") else None

    return answer, admit


@contextlib.contextmanager
def serve(socket_path: Path | None = None, **limits: float) -> Iterator[Served]:
    """A server answering with what it read (``/refused...`` is refused before its body)."""
    answered: list[str] = []
    answer, admit = _echo(answered)
    fields = {"connections": 2, "read_timeout": 0.5, "head_seconds": 1, "body_seconds": 1,
              "body_bytes": 64, **limits}  # fmt: skip
    server = BoundedServer(answer, admit, socket_path=socket_path, limits=ServerLimits(**fields))
    try:
        yield server, answered
    finally:
        server.shutdown()


@pytest.fixture
def served() -> Iterator[Served]:
    with serve() as both:
        yield both


def connect(server: BoundedServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=8)


def read_answer(client: socket.socket) -> tuple[str, bytes]:
    """One answer: its status line and headers, and its body of ``Content-Length`` bytes."""
    data = b""
    while b"\r\n\r\n" not in data:
        part = client.recv(65536)
        assert part, data
        data += part
    head, _, body = data.partition(b"\r\n\r\n")
    found = re.search(rb"\r\nContent-Length: (\d+)\r\n", head + b"\r\n")
    assert found, head
    while len(body) < int(found[1]):
        part = client.recv(65536)
        assert part, data
        body += part
    assert len(body) == int(found[1]), "more than one answer arrived"
    return head.decode(), body


def parse(data: bytes) -> list[tuple[str, bytes]]:
    """The answers in ``data``, one after another, each its head and its body."""
    found = []
    while data:
        head, _, data = data.partition(b"\r\n\r\n")
        length = re.search(rb"\r\nContent-Length: (\d+)\r\n", head + b"\r\n")
        assert length, head
        found.append((head.decode(), data[: int(length[1])]))
        data = data[int(length[1]) :]
    return found


def rest(client: socket.socket) -> bytes:
    """All the server sends until it closes (a reset is a close too)."""
    data = b""
    with contextlib.suppress(ConnectionResetError):
        while part := client.recv(65536):
            data += part
    return data


def closed_after(client: socket.socket) -> bool:
    """Whether a request sent now gets no answer: the server closed the connection."""
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        client.sendall(b"GET /next HTTP/1.1\r\n\r\n")
    return rest(client) == b""


def message(body: bytes) -> str:
    return str(json.loads(body)["error"]["message"])


HEADERS_OVER = "".join(f"x-{n}: {n}\r\n" for n in range(101))


@pytest.mark.parametrize(
    ("request_text", "status", "said"),
    [
        ("POST /x HTTP/1.1\r\nContent-Length: 65\r\n\r\n", "413 Request Entity Too Large",
         "the body may hold at most 64 bytes"),
        ("POST /x HTTP/1.1\r\nContent-Length: -1\r\n\r\n", "411 Length Required",
         "a Content-Length is required"),
        ("POST /x HTTP/1.1\r\n\r\n", "411 Length Required", "a Content-Length is required"),
        ("POST /x HTTP/1.1\r\nContent-Length: ten\r\n\r\n", "411 Length Required",
         "a Content-Length is required"),
        ("POST /x HTTP/1.1\r\nTransfer-Encoding: gzip, Chunked\r\nContent-Length: 3\r\n\r\n",
         "411 Length Required", "send the body with a Content-Length"),
        ("GET /x HTTP/1.1\r\n" + HEADERS_OVER + "\r\n", "431 Request Header Fields Too Large",
         "at most 100 header lines"),
        ("GET /x\r\n\r\n", "400 Bad Request", "a request line is METHOD PATH HTTP/1.1"),
        ("GET /x HTTP/2\r\n\r\n", "400 Bad Request", "a request line is METHOD PATH HTTP/1.1"),
        ("\r\n\r\n", "400 Bad Request", "a request line is METHOD PATH HTTP/1.1"),
    ],
    ids=["body one over", "negative length", "no length", "length not a number", "chunked",
         "101 header lines", "two words", "HTTP/2", "empty head"],
)  # fmt: skip
def test_a_request_past_a_bound_is_answered_once_and_its_connection_closed(
    served: Served, request_text: str, status: str, said: str
) -> None:
    server, answered = served
    with connect(server) as client:
        client.sendall(request_text.encode())
        head, body = read_answer(client)
        assert head.split("\r\n") == [
            f"HTTP/1.1 {status}", "Content-Type: application/json",
            f"Content-Length: {len(body)}", "Connection: close",
        ]  # fmt: skip
        assert message(body) == said
        assert closed_after(client)
    assert answered == []


def test_a_refused_token_is_answered_before_the_body_is_sent(served: Served) -> None:
    server, answered = served
    with connect(server) as client:  # no byte of the body: the refusal does not wait for one
        client.sendall(b"POST /refused?q=1 HTTP/1.1\r\nContent-Length: 10\r\n\r\n")
        head, body = read_answer(client)
        assert head.startswith("HTTP/1.1 401 Unauthorized\r\n")
        assert head.endswith("\r\nConnection: close")
        assert json.loads(body) == {"refused": "/refused"}
        assert closed_after(client)
    assert answered == []


def test_a_head_of_exactly_64_kb_waits_for_more_and_one_byte_over_is_refused(
    served: Served,
) -> None:
    server, answered = served
    with connect(server) as client:
        client.sendall(b"GET /x HTTP/1.1\r\nX-Pad: " + b"p" * (65536 - 24))
        head, body = read_answer(client)  # never whole: late, not too long
        assert head.startswith("HTTP/1.1 408 Request Timeout\r\n")
        assert head.endswith("\r\nConnection: close")
        assert message(body).startswith("the head was not whole within 1s")
        assert closed_after(client)
    with connect(server) as client:
        client.sendall(b"GET /x HTTP/1.1\r\nX-Pad: " + b"p" * (65536 - 23))
        head, body = read_answer(client)
        assert head.startswith("HTTP/1.1 431 Request Header Fields Too Large\r\n")
        assert head.endswith("\r\nConnection: close")
        assert message(body) == "the head may hold at most 65536 bytes"
        assert closed_after(client)
    assert answered == []


def test_a_kept_alive_connection_serves_request_after_request_until_asked_to_close(
    served: Served,
) -> None:
    """Pipelined in one write: 100 header lines, a body of exactly the cap and an empty one,
    an unknown method (refused, the connection kept) and a query (not part of the path)."""
    server, answered = served
    full = "b" * 64
    requests = (
        "GET /a HTTP/1.1\r\n" + "".join(f"x-{n}: {n}\r\n" for n in range(100)) + "\r\n"
        f"POST /b HTTP/1.1\r\nContent-Length: 64\r\n\r\n{full}"
        "POST /c HTTP/1.1\r\nContent-Length: 0\r\n\r\n"
        "PUT /d HTTP/1.1\r\n\r\n"
        "GET /e?x=1?y HTTP/1.1\r\n\r\n"
        "GET /f HTTP/1.1\r\nConnection: CLOSE\r\n\r\n"
    )
    with connect(server) as client:
        client.sendall(requests.encode())
        answers = parse(rest(client))  # all of them, and then closed
    heads = [head.split("\r\n") for head, _ in answers]
    assert [head[0] for head in heads] == ["HTTP/1.1 200 OK"] * 3 + [
        "HTTP/1.1 501 Not Implemented", "HTTP/1.1 200 OK", "HTTP/1.1 200 OK",
    ]  # fmt: skip
    assert [head[-1] == "Connection: close" for head in heads] == [False] * 5 + [True]
    bodies = [json.loads(body) for _, body in answers]
    assert bodies[1] == {"method": "POST", "path": "/b", "body": full}
    assert bodies[2] == {"method": "POST", "path": "/c", "body": ""}
    assert bodies[3] == {"error": {"message": "no method PUT", "type": "invalid_request"}}
    assert bodies[4] == {"method": "GET", "path": "/e", "body": ""}
    assert answered == ["/a", "/b", "/c", "/e", "/f"]


@pytest.mark.parametrize("split", [1, 2, 3])
def test_a_head_ending_across_two_reads_leaves_the_body_whole(served: Served, split: int) -> None:
    server, _ = served
    head = b"POST /x HTTP/1.1\r\nContent-Length: 5\r\n\r\n"
    cut = len(head) - 4 + split
    with connect(server) as client:
        for _ in range(2):
            client.sendall(head[:cut])
            time.sleep(0.15)  # read by the server before the rest comes
            client.sendall(head[cut:] + b"hello")
            assert json.loads(read_answer(client)[1])["body"] == "hello"


def test_an_idle_kept_alive_connection_waits_the_whole_read_timeout(served: Served) -> None:
    """After a head that came in two reads, and after a body, the wait for the next request is
    the read timeout again, not what was left of the head's or the body's deadline."""
    with serve(read_timeout=2.5) as (server, _):
        first, second = connect(server), connect(server)
        first.sendall(b"GET /x HTTP/1.1\r\n")
        second.sendall(b"POST /y HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi")
        time.sleep(0.2)
        first.sendall(b"\r\n")
        assert read_answer(first)[0].startswith("HTTP/1.1 200 ")
        assert read_answer(second)[0].startswith("HTTP/1.1 200 ")
        time.sleep(1.4)  # over what was left of either deadline, under the read timeout
        for client in (first, second):
            client.sendall(b"GET /z HTTP/1.1\r\nConnection: close\r\n\r\n")
            assert read_answer(client)[0].startswith("HTTP/1.1 200 ")
            client.close()


def test_a_stalled_head_or_body_is_cut_at_its_deadline_not_the_read_timeout() -> None:
    with serve(read_timeout=6) as (server, answered):
        head, body = connect(server), connect(server)
        started = time.monotonic()
        head.sendall(b"GET /x HTTP/1.1\r\n")
        body.sendall(b"POST /x HTTP/1.1\r\nContent-Length: 10\r\n\r\n")  # and no byte of it
        for client, said in ((head, "the head was not whole within 1s"),
                             (body, "the body took longer than 1s")):  # fmt: skip
            status, answer = read_answer(client)
            assert status.startswith("HTTP/1.1 408 Request Timeout\r\n")
            assert message(answer).startswith(said)
            assert closed_after(client)
            client.close()
        assert 0.9 <= time.monotonic() - started < 5
    assert answered == []


def test_a_body_that_stops_trickles_or_ends_early_is_refused(served: Served) -> None:
    server, answered = served
    with connect(server) as client:
        client.sendall(b"POST /x HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc")
        head, body = read_answer(client)
        assert head.startswith("HTTP/1.1 408 ")
        assert message(body) == "no byte of the body for 0.5s"
    with connect(server) as client:
        client.sendall(b"POST /x HTTP/1.1\r\nContent-Length: 10\r\n\r\nab")
        client.shutdown(socket.SHUT_WR)
        head, body = read_answer(client)
        assert head.startswith("HTTP/1.1 400 ")
        assert message(body) == "the body ended early"
    assert answered == []
    # a byte every 0.15 s: far under the read timeout (room for a loaded machine), never done
    with serve(read_timeout=1.5) as (server, answered), connect(server) as client:
        client.sendall(b"POST /x HTTP/1.1\r\nContent-Length: 60\r\n\r\n")
        started = time.monotonic()
        answer = b""
        while not answer:
            if select.select([client], [], [], 0)[0]:
                answer = client.recv(65536)
            with contextlib.suppress(OSError):
                client.sendall(b"x")
            time.sleep(0.15)
            assert time.monotonic() - started < 5
        assert answer.startswith(b"HTTP/1.1 408 ")
        assert message(answer.partition(b"\r\n\r\n")[2]) == "the body took longer than 1s"
    assert answered == []


def test_with_no_time_for_a_body_an_empty_one_is_served_and_any_other_refused() -> None:
    with serve(body_seconds=0) as (server, answered), connect(server) as client:
        client.sendall(b"POST /x HTTP/1.1\r\nContent-Length: 0\r\n\r\n"
                       b"POST /y HTTP/1.1\r\nContent-Length: 1\r\n\r\n")  # fmt: skip
        (first, _), (second, body) = parse(rest(client))  # the second body is not waited for
    assert first.startswith("HTTP/1.1 200 OK\r\n")
    assert second.startswith("HTTP/1.1 408 Request Timeout\r\n")
    assert message(body) == "the body took longer than 0s"
    assert answered == ["/x"]


def test_the_connection_cap_is_exact_and_a_freed_place_is_taken_again() -> None:
    with serve(read_timeout=8) as (server, _):
        held = [connect(server) for _ in range(2)]
        for _ in range(2):  # a refused connection takes no place, nor gives one back
            with connect(server) as extra:
                assert rest(extra) == (
                    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
                    b"Connection: close\r\n\r\n"
                )
            time.sleep(0.1)
        for client in held:  # both places were taken by the held connections, and served
            client.sendall(b"GET /x HTTP/1.1\r\n\r\n")
            assert read_answer(client)[0].startswith("HTTP/1.1 200 ")
        held.pop().close()
        time.sleep(0.2)
        with connect(server) as again:
            again.sendall(b"GET /x HTTP/1.1\r\n\r\n")
            assert read_answer(again)[0].startswith("HTTP/1.1 200 ")
        held[0].close()


def test_a_server_stops_at_once_cutting_its_connections_and_its_port_is_free() -> None:
    with serve(read_timeout=30) as (server, _):
        port = server.port
        assert port >= 1024  # any free port of 127.0.0.1
        with connect(server) as client:  # closed by the server: its side lingers in TIME_WAIT
            client.sendall(b"GET /x HTTP/1.1\r\nConnection: close\r\n\r\n")
            assert read_answer(client)[0].startswith("HTTP/1.1 200 ")
            assert rest(client) == b""
        kept = connect(server)
        kept.sendall(b"GET /x HTTP/1.1\r\n\r\n")
        assert read_answer(kept)[0].startswith("HTTP/1.1 200 ")
        stopping = threading.Thread(target=server.shutdown)
        started = time.monotonic()
        stopping.start()
        stopping.join(10)
        assert time.monotonic() - started < 10  # not waiting the kept connection's 30 s
        assert closed_after(kept)  # cut: no answer after the server stopped
        kept.close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5)
    again = BoundedServer(*_echo([]), port=port)
    again.shutdown()


def test_a_unix_socket_server_has_no_port_and_removes_its_socket(tmp_path: Path) -> None:
    path = tmp_path / "server.sock"
    with serve(socket_path=path) as (server, answered):
        assert server.port == 0
        with socket.socket(socket.AF_UNIX) as client:
            client.connect(str(path))
            client.sendall(b"GET /u HTTP/1.1\r\n\r\n")
            assert json.loads(read_answer(client)[1])["path"] == "/u"
    assert not path.exists()
    assert answered == ["/u"]


def test_the_limits_are_those_the_docs_promise_and_cannot_change_under_a_server() -> None:
    assert ServerLimits() == ServerLimits(connections=16, read_timeout=30.0, head_seconds=10.0,
                                          body_seconds=60.0, body_bytes=32 * 2**20)  # fmt: skip
    with pytest.raises(dataclasses.FrozenInstanceError):
        ServerLimits().body_bytes = 1  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        Response(200, b"").status = 500  # type: ignore[misc]


HOLDER = """
import socket
import subprocess
import sys
from harness.gateway.server import BoundedServer, ServerLimits, json_response
server = BoundedServer(lambda *request: json_response(200, {}), lambda path, headers: None,
                       limits=ServerLimits(read_timeout=30))
client = socket.create_connection(("127.0.0.1", server.port))
client.sendall(b"GET /x HTTP/1.1\\r\\n\\r\\n")
print(client.recv(1000).split(b"\\r\\n")[0].decode(), flush=True)
"""


def test_a_connection_left_open_does_not_keep_the_process_alive() -> None:
    """A process that ends without stopping its server (a kept-alive connection waiting 30 s
    for its next request) exits at once: the connections' threads are daemons."""
    done = subprocess.run([sys.executable, "-c", HOLDER], capture_output=True, text=True,
                          timeout=20, check=True)  # fmt: skip
    assert done.stdout == "HTTP/1.1 200 OK\n"
