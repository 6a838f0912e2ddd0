"""The gateway's HTTP server: bounded, on a unix socket or a port of 127.0.0.1.

Bounded so that no client can hang it or fill the harness's memory: at most ``connections``
connections at once (one more is answered 503 and closed), every read waits at most
``read_timeout`` seconds, a request's head (its request line and headers, at most
:data:`MAX_HEAD` bytes) at most ``head_seconds`` from its first byte and a whole body at most
``body_seconds``, a body is at most ``body_bytes`` (413; ``Content-Length`` is required: 411). A connection's thread is a daemon
and the server's threads end with :meth:`BoundedServer.shutdown`. A request is framed one way
only: a head that could be read two ways is refused (400) and its connection closed, and a
body is read whatever the method (or the connection closed), never taken for the next request.
"""

from __future__ import annotations

import contextlib
import io
import re
import socket
import socketserver
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import Any

from harness.core.text import compact_json

MB = 1 << 20


@dataclass(frozen=True)
class ServerLimits:
    """What one client may take of the gateway."""

    connections: int = 16
    read_timeout: float = 30.0
    head_seconds: float = 10.0
    body_seconds: float = 60.0
    body_bytes: int = 32 * MB


@dataclass(frozen=True)
class Response:
    """An answer: a JSON body, or server-sent events (sent whole: the reply is complete)."""

    status: int
    body: bytes
    content_type: str = "application/json"


def json_response(status: int, data: Any) -> Response:
    return Response(status, compact_json(data).encode())


Answer = Callable[[str, str, dict[str, str], bytes], Response]
"""``(method, path, headers (lower-case names), body) -> Response``."""
Admit = Callable[[str, dict[str, str]], Response | None]
"""``(path, headers) -> refusal``, asked before the body is read (the per-run token)."""


class _Handler(socketserver.StreamRequestHandler):
    """HTTP/1.1 as the agents' clients speak it, read by hand: a request line, header lines, a
    body of ``Content-Length`` bytes; the connection kept alive until the client closes it or
    asks to (``Connection: close``). Nothing is parsed that the gateway does not read."""

    server: _Served
    rfile: io.BufferedReader  # rbufsize -1: buffered, so it can be peeked

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.limits.read_timeout)

    def handle(self) -> None:
        with contextlib.suppress(OSError):  # a timeout, or the client gone
            while self._one():
                pass

    def _one(self) -> bool:
        """Serve one request; whether the connection stays open for another."""
        head = self._head()
        if not isinstance(head, bytes):
            if head is not None:
                self._send(head, close=True)
            return False
        line, *fields = head.split(b"\r\n")
        parts = line.split()
        if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
            self._send(_refusal(400, "a request line is METHOD PATH HTTP/1.1"), close=True)
            return False
        if len(fields) > MAX_HEADERS:
            self._send(_refusal(431, f"at most {MAX_HEADERS} header lines"), close=True)
            return False
        method, target = parts[0].decode("latin-1"), parts[1].decode("latin-1")
        headers = _headers(fields)
        if isinstance(headers, Response):
            self._send(headers, close=True)
            return False
        keep = parts[2] == b"HTTP/1.1" and headers.get("connection", "").lower() != "close"
        sized = "transfer-encoding" in headers or headers.get("content-length", "0") != "0"
        if method not in ("GET", "POST"):  # a body it declares is not read: nothing more is
            self._send(_refusal(501, f"no method {method}"), close=not keep or sized)
            return keep and not sized
        path = target.split("?", 1)[0]
        refusal = self.server.admit(path, headers)
        if refusal is not None:
            self._send(refusal, close=True)
            return False
        body = self._body(headers) if method == "POST" or sized else b""
        if isinstance(body, Response):
            self._send(body, close=True)
            return False
        self._send(self.server.answer(method, path, headers, body), close=not keep)
        return keep

    def _head(self) -> bytes | Response | None:
        """The request line and the header lines, without the blank line that ends them; None
        when the client closed or went quiet before a request began. Read as it arrives, never
        past the blank line (the body's bytes stay for :meth:`_body`), within ``head_seconds``
        of its first byte however slowly it is fed."""
        limits = self.server.limits
        head = bytearray()
        deadline = None
        while True:
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return _late(limits)
                self.connection.settimeout(min(remaining, limits.read_timeout))
            try:
                arrived = self.rfile.peek(1)  # what is buffered, else one read of the socket
            except TimeoutError:
                return None if deadline is None else _late(limits)
            if not arrived:
                return None
            deadline = deadline or time.monotonic() + limits.head_seconds
            seen = len(head)
            end = (bytes(head[-3:]) + arrived).find(b"\r\n\r\n")
            head += self.rfile.read(len(arrived) if end < 0 else end + 4 - min(seen, 3))
            if end >= 0:
                self.connection.settimeout(limits.read_timeout)
                return bytes(head[:-4])
            if len(head) > MAX_HEAD:
                return _refusal(431, f"the head may hold at most {MAX_HEAD} bytes")

    def _body(self, headers: dict[str, str]) -> bytes | Response:
        limits = self.server.limits
        if "transfer-encoding" in headers:
            return _refusal(411, "send the body with a Content-Length")
        given = headers.get("content-length", "")
        if not (given.isascii() and given.isdigit()):  # int() would take "+1", "1_0", " 1"
            return _refusal(411, "a Content-Length is required")
        length = int(given) if len(given) <= 18 else limits.body_bytes + 1
        if length > limits.body_bytes:
            return _refusal(413, f"the body may hold at most {limits.body_bytes} bytes")
        if headers.get("expect", "").lower() == "100-continue":
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        deadline = time.monotonic() + limits.body_seconds
        parts: list[bytes] = []
        left = length
        while left:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            self.connection.settimeout(min(remaining, limits.read_timeout))
            try:
                part = self.rfile.read1(min(left, 1 << 16))
            except TimeoutError:
                if remaining > limits.read_timeout:  # not the deadline: the client went quiet
                    return _refusal(408, f"no byte of the body for {limits.read_timeout:g}s")
                break
            if not part:
                return _refusal(400, "the body ended early")
            parts.append(part)
            left -= len(part)
        if left:
            return _refusal(408, f"the body took longer than {limits.body_seconds:g}s")
        self.connection.settimeout(limits.read_timeout)
        return b"".join(parts)

    def _send(self, response: Response, *, close: bool) -> None:
        """The status line, the headers and the body in one write: a body written after its
        headers waits, over TCP, for the client's delayed acknowledgement of them (about 40 ms
        a request)."""
        status = response.status
        head = (
            f"HTTP/1.1 {status} {_PHRASES.get(status, '')}\r\n"
            f"Content-Type: {response.content_type}\r\n"
            f"Content-Length: {len(response.body)}\r\n{_CLOSE if close else ''}\r\n"
        )
        self.wfile.write(head.encode() + response.body)


MAX_HEAD = 65536
"""Bytes in a request's line and headers."""
MAX_HEADERS = 100
_FIELD_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
"""A header's name: an HTTP token."""
_CLOSE = "Connection: close\r\n"
_PHRASES = {status.value: status.phrase for status in HTTPStatus}


def _headers(fields: list[bytes]) -> dict[str, str] | Response:
    """Header lines, names in lower case; refused where a line could be read two ways (no
    colon, a space in or around the name, a line folded onto the one before) or where the
    body's length is given twice."""
    headers: dict[str, str] = {}
    for field in fields:
        name, colon, value = field.decode("latin-1").partition(":")
        if not colon or not _FIELD_NAME.fullmatch(name):
            return _refusal(400, f"a header line is NAME: VALUE, got {field[:64]!r}")
        name = name.lower()
        if name in headers and name in ("content-length", "transfer-encoding"):
            return _refusal(400, f"{name} is given twice")
        headers[name] = value.strip()
    return headers


def _late(limits: ServerLimits) -> Response:
    """The refusal of a head that came too slowly (made only then: not on every request)."""
    return _refusal(
        408, f"the head was not whole within {limits.head_seconds:g}s, or stopped arriving "
        f"for {limits.read_timeout:g}s",
    )  # fmt: skip


def _refusal(status: int, message: str) -> Response:
    return json_response(status, {"error": {"message": message, "type": "invalid_request"}})


class _Served(socketserver.ThreadingMixIn, socketserver.BaseServer):
    """What both servers share: the limits, the answer, the connection cap."""

    daemon_threads = True
    block_on_close = False
    limits: ServerLimits
    answer: Answer
    admit: Admit
    _slots: threading.BoundedSemaphore
    _lock: threading.Lock
    _open: set[socket.socket]
    """The connections being served, cut by :meth:`cut`."""

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            with contextlib.suppress(OSError):
                request.sendall(
                    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
                    b"Connection: close\r\n\r\n"
                )
            self.shutdown_request(request)
            return
        with self._lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._lock:
                self._open.discard(request)
            self._slots.release()

    def cut(self) -> None:
        """End every connection being served: its next read finds the end, its next write fails."""
        with self._lock:
            for request in self._open:
                with contextlib.suppress(OSError):
                    request.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client gone mid-answer is its own affair; the server goes on."""


class _UnixServer(_Served, socketserver.UnixStreamServer):
    pass


class _TcpServer(_Served, socketserver.TCPServer):
    allow_reuse_address = True


class BoundedServer:
    """Serves ``answer`` (after ``admit``) on ``socket_path``, or on 127.0.0.1 (``port``, 0 for
    any free one) when no socket is given, in a thread of its own until :meth:`shutdown`."""

    def __init__(
        self,
        answer: Answer,
        admit: Admit,
        *,
        socket_path: Path | None = None,
        port: int = 0,
        limits: ServerLimits | None = None,
    ) -> None:
        server: _Served
        if socket_path is not None:
            server = _UnixServer(str(socket_path), _Handler)
        else:
            server = _TcpServer(("127.0.0.1", port), _Handler)
        server.limits = limits or ServerLimits()
        server.answer, server.admit = answer, admit
        server._slots = threading.BoundedSemaphore(server.limits.connections)
        server._lock, server._open = threading.Lock(), set()
        self._server = server
        self.socket_path = socket_path
        self.port = 0 if socket_path is not None else server.socket.getsockname()[1]
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True,
            name="harness-gateway",
        )  # fmt: skip
        self._thread.start()

    def shutdown(self) -> None:
        """Stop accepting, close the listening socket; connections under way are cut."""
        self._server.shutdown()
        self._server.server_close()
        self._server.cut()
        self._thread.join()
        if self.socket_path is not None:
            with contextlib.suppress(OSError):
                self.socket_path.unlink()
