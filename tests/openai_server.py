"""A tiny OpenAI-compatible chat-completions server on 127.0.0.1, scripted per request.

Each POST to ``/v1/chat/completions`` (or ``/chat/completions``) takes the next behaviour from
the script: a text reply, a tool-call reply, an HTTP error status, or a hang. Every request is
recorded. The server is bounded: hangs end on their own (or at :meth:`OpenAIServer.stop`), and a
deadline timer stops the whole server even if a test forgets to.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

COMPLETION_PATHS = ("/v1/chat/completions", "/chat/completions")


@dataclass(frozen=True)
class Text:
    """A plain assistant reply; ``usage=False`` leaves the usage block out of the response,
    ``finish`` is its finish reason (``"length"``: cut at its token limit).

    ``cached_tokens`` of the prompt are reported as read from the provider's prompt cache.
    """

    content: str = "hello"
    prompt_tokens: int = 11
    completion_tokens: int = 3
    usage: bool = True
    cached_tokens: int = 0
    finish: str = "stop"


@dataclass(frozen=True)
class ToolCalls:
    """An assistant reply holding tool calls, each ``(id, name, arguments as sent)``."""

    calls: tuple[tuple[str, str, str], ...]
    content: str | None = None
    prompt_tokens: int = 20
    completion_tokens: int = 7
    usage: bool = True
    cached_tokens: int = 0


@dataclass(frozen=True)
class Status:
    """An HTTP error with the provider's error body and any extra headers (``Retry-After``)."""

    code: int
    message: str = "scripted error"
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Hang:
    """Answer nothing for ``seconds`` (bounded), then close the connection."""

    seconds: float = 5.0


Behaviour = Text | ToolCalls | Status | Hang


@dataclass(frozen=True)
class Request:
    """One request the server received, and when (``time.monotonic()``)."""

    path: str
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    """Header names in lower case."""
    at: float = 0.0
    raw: bytes = b""
    """The body's bytes as they came."""


class OpenAIServer:
    """Serve scripted chat completions until :meth:`stop` or ``deadline`` seconds pass.

    A subclass speaks another provider's dialect by overriding ``paths``, :meth:`render` and
    :meth:`error` (see ``tests/anthropic_server.py``).
    """

    paths: tuple[str, ...] = COMPLETION_PATHS

    def __init__(self, *, deadline: float = 60.0) -> None:
        self._script: list[Behaviour] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.requests: list[Request] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_class(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._deadline = threading.Timer(deadline, self.stop)
        self._deadline.daemon = True

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def queue(self, *behaviours: Behaviour) -> None:
        with self._lock:
            self._script.extend(behaviours)

    def start(self) -> OpenAIServer:
        self._thread.start()
        self._deadline.start()
        return self

    def stop(self) -> None:
        if self._stopping.is_set():
            return
        self._stopping.set()
        self._deadline.cancel()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _next(self, request: Request) -> Behaviour | None:
        with self._lock:
            self.requests.append(request)
            return self._script.pop(0) if self._script else None

    def _hang(self, seconds: float) -> None:
        self._stopping.wait(seconds)

    def render(self, body: dict[str, Any], behaviour: Text | ToolCalls) -> dict[str, Any]:
        """The 200 response to ``body`` for a reply behaviour."""
        return _completion(body.get("model", "unknown"), behaviour)

    def error(self, code: int, message: str) -> dict[str, Any]:
        """The body of an HTTP error ``code``."""
        return _error(message, "scripted" if code != 404 else "not_found")


def _handler_class(server: OpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            path = self.path.split("?", 1)[0]
            if path not in server.paths:
                self._send(404, server.error(404, f"no route for {path}"))
                return
            body = json.loads(raw or b"{}")
            headers = {k.lower(): v for k, v in self.headers.items()}
            behaviour = server._next(Request(path, body, headers, time.monotonic(), raw))
            if behaviour is None:
                self._send(400, server.error(400, "the server's script is exhausted"))
            elif isinstance(behaviour, Hang):
                server._hang(behaviour.seconds)
                self.close_connection = True
            elif isinstance(behaviour, Status):
                payload = server.error(behaviour.code, behaviour.message)
                self._send(behaviour.code, payload, behaviour.headers)
            else:
                self._send(200, server.render(body, behaviour))

        def _send(
            self, code: int, payload: dict[str, Any], headers: tuple[tuple[str, str], ...] = ()
        ) -> None:
            data = json.dumps(payload).encode()
            try:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (its timeout); nothing left to answer

        def log_message(self, format: str, *args: Any) -> None:
            """Keep test output quiet."""

    return Handler


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def _completion(model: str, behaviour: Text | ToolCalls) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": behaviour.content}
    finish = behaviour.finish if isinstance(behaviour, Text) else "stop"
    if isinstance(behaviour, ToolCalls):
        finish = "tool_calls"
        message["tool_calls"] = [
            {"id": id_, "type": "function", "function": {"name": name, "arguments": arguments}}
            for id_, name, arguments in behaviour.calls
        ]
    payload: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }
    if behaviour.usage:
        payload["usage"] = {
            "prompt_tokens": behaviour.prompt_tokens,
            "completion_tokens": behaviour.completion_tokens,
            "total_tokens": behaviour.prompt_tokens + behaviour.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": behaviour.cached_tokens},
        }
    return payload


class NoChoice(OpenAIServer):
    """A provider whose answer (a 200 all the same) holds no choice."""

    def render(self, body: dict[str, Any], behaviour: Text | ToolCalls) -> dict[str, Any]:
        return {**super().render(body, behaviour), "choices": []}
