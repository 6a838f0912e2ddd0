"""What docs/models.md says of a local Ollama model holds through litellm's real HTTP path: the
server is found by ``api_base`` or ``OLLAMA_API_BASE``, ``num_ctx`` reaches Ollama's options,
``context_window`` is the harness's own, and loop.toml's ``[model_options]`` carry them."""

from __future__ import annotations

import json
import re
import threading
import tomllib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from harness.models.litellm_model import LiteLLMModel

DOCS = Path(__file__).resolve().parents[2] / "docs" / "models.md"


class FakeOllama(ThreadingHTTPServer):
    """Answers Ollama's ``/api/chat`` with "hello" and keeps every request's path and body."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[tuple[str, dict[str, Any]]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}"


class _Handler(BaseHTTPRequestHandler):
    server: FakeOllama

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append((self.path, body))
        reply = {
            "model": body["model"], "created_at": "2025-01-01T00:00:00Z", "done": True,
            "message": {"role": "assistant", "content": "hello"}, "done_reason": "stop",
            "prompt_eval_count": 12, "eval_count": 1,
        }  # fmt: skip
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        return None


@pytest.fixture
def ollama() -> Iterator[FakeOllama]:
    server = FakeOllama()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def docs_options() -> dict[str, Any]:
    """The ``[model_options]`` of the Ollama loop.toml in docs/models.md."""
    (block,) = [
        b for b in re.findall(r"```toml\n(.*?)```", DOCS.read_text(), re.DOTALL) if "ollama" in b
    ]
    options: dict[str, Any] = tomllib.loads(block)["model_options"]
    return options


def test_the_docs_ollama_options_reach_the_server_at_api_base(ollama: FakeOllama) -> None:
    options = docs_options() | {"api_base": ollama.url}
    model = LiteLLMModel("ollama_chat/qwen2.5-coder:14b", **options)

    reply = model.complete([{"role": "user", "content": "say hello"}])

    assert reply.content == "hello"
    assert model.context_window == options["context_window"] == 16384
    ((path, body),) = ollama.requests
    assert path == "/api/chat"
    assert body["model"] == "qwen2.5-coder:14b"
    assert body["options"]["num_ctx"] == 16384
    assert "context_window" not in body["options"]  # the harness's own, never sent


def test_ollama_api_base_in_the_environment_finds_the_server(
    ollama: FakeOllama, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLLAMA_API_BASE", ollama.url)
    model = LiteLLMModel("ollama_chat/llama3.1", num_retries=0)

    assert model.complete([{"role": "user", "content": "hi"}]).content == "hello"
    ((path, body),) = ollama.requests
    assert (path, body["model"]) == ("/api/chat", "llama3.1")
    assert model.context_window == 32_000  # litellm knows no window for it: the harness's guess
