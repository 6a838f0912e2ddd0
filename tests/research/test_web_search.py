"""web_search against a stand-in for the provider's HTTP API on 127.0.0.1."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from harness.core.errors import ConfigError
from harness.research.archive import SourceArchive
from harness.research.web_search import BRAVE_ENDPOINT, WebSearchConfig, web_search_tool
from harness.tools import ToolContext

KEY = "brave-test-key-123"
RESULTS = {
    "web": {
        "results": [
            {
                "title": "Tide - <strong>Wikipedia</strong>",
                "url": "https://en.wikipedia.org/wiki/Tide",
                "description": "Tides are the rise &amp; fall of <strong>sea</strong> levels.",
            },
            {"title": "No address", "description": "dropped"},
            {"title": "Tide tables", "url": "https://tides.example/tables", "description": ""},
            {"title": "Third", "url": "https://third.example/", "description": "third"},
        ]
    }
}


class _Provider(BaseHTTPRequestHandler):
    seen: list[dict[str, object]] = []

    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        query = parse_qs(urlsplit(self.path).query)
        _Provider.seen.append({"query": query, "token": self.headers.get("X-Subscription-Token")})
        text = query.get("q", [""])[0]
        if self.headers.get("X-Subscription-Token") != KEY:
            return self._reply(401, {"error": "bad key"})
        if text == "busy":
            return self._reply(429, {"error": "slow down"}, {"Retry-After": "7"})
        if text == "slow":
            time.sleep(3)
        if text == "garbled":
            return self._reply(200, "not json at all")
        if text == "nothing":
            return self._reply(200, {"web": {"results": []}})
        return self._reply(200, RESULTS)

    def _reply(self, status: int, body: object, headers: dict[str, str] | None = None) -> None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **(headers or {})}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def endpoint() -> Iterator[str]:
    _Provider.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Provider)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/res/v1/web/search"
    server.shutdown()
    server.server_close()


def search(
    endpoint: str, query: str, tmp_path: Path, *, key: str = KEY, **kw: object
) -> tuple[str, bool]:
    settings = WebSearchConfig(endpoint=endpoint, **kw)  # type: ignore[arg-type]
    found = web_search_tool(settings, env={"BRAVE_API_KEY": key})
    result = found.run({"query": query}, ToolContext(workspace=tmp_path))
    return result.output, result.is_error


def test_results_are_a_numbered_list_without_markup(endpoint: str, tmp_path: Path) -> None:
    output, is_error = search(endpoint, "why tides", tmp_path, max_results=2)
    assert not is_error
    assert output == (
        "Results for 'why tides':\n"
        "1. Tide - Wikipedia\n   https://en.wikipedia.org/wiki/Tide\n"
        "   Tides are the rise & fall of sea levels.\n"
        "2. Tide tables\n   https://tides.example/tables"
    )
    [request] = _Provider.seen
    assert request == {"query": {"q": ["why tides"], "count": ["2"]}, "token": KEY}
    assert KEY not in output


@pytest.mark.parametrize(
    ("query", "key", "message"),
    [
        ("busy", KEY, "rate limited by the provider; retry after 7s"),
        ("anything", "wrong-key", "the provider refused the key (HTTP 401)"),
        ("garbled", KEY, "the provider's answer is not readable"),
        ("slow", KEY, "no answer within 1s"),
        ("  ", KEY, "the query is empty"),
    ],
)
def test_provider_failures_are_error_observations(
    endpoint: str, tmp_path: Path, query: str, key: str, message: str
) -> None:
    output, is_error = search(endpoint, query, tmp_path, key=key, timeout=1)
    assert is_error
    assert message in output
    assert "wrong-key" not in output


def test_no_results_says_so(endpoint: str, tmp_path: Path) -> None:
    assert search(endpoint, "nothing", tmp_path) == ("No results for 'nothing'.", False)


def test_a_missing_key_is_a_configuration_error() -> None:
    with pytest.raises(ConfigError, match="the environment variable SEARCH_KEY is not set"):
        web_search_tool(WebSearchConfig(api_key_env="SEARCH_KEY"), env={})


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"provider": "other"}, "Input should be 'brave' or 'searxng', got 'other'"),
        ({"max_results": 0}, "from 1 to 20"),
        ({"endpoint": "ftp://x"}, "endpoint: String should match pattern"),
    ],
)
def test_bad_settings_are_refused(settings: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        WebSearchConfig(**settings)  # type: ignore[arg-type]


class _SearXNG(BaseHTTPRequestHandler):
    """SearXNG's JSON API: ``GET /search?q=...&format=json``, results with ``content``."""

    seen: list[dict[str, object]] = []

    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        _SearXNG.seen.append({"path": parts.path, "query": query, **dict(self.headers)})
        if parts.path != "/search" or query.get("format") != ["json"]:
            return _Provider._reply(self, 403, {"error": "format not allowed"})  # type: ignore[arg-type]
        results = [
            {
                "title": "Harran <b>Bridge</b>",
                "url": "http://bridge.example/",
                "content": "Opened 1887.",
            },
            {"title": "No address", "content": "dropped"},
            {
                "title": "Span",
                "url": "http://span.example/",
                "content": "148 &amp; 142 m",
                "engine": "x",
            },
        ]
        return _Provider._reply(self, 200, {"query": query["q"][0], "results": results})  # type: ignore[arg-type]

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def searxng() -> Iterator[str]:
    _SearXNG.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SearXNG)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/search"
    server.shutdown()
    server.server_close()


def test_a_searxng_instance_answers_without_a_key_and_is_archived(
    searxng: str, tmp_path: Path
) -> None:
    archive = SourceArchive(tmp_path / "archive")
    settings = WebSearchConfig(provider="searxng", endpoint=searxng, max_results=5)
    found = web_search_tool(settings, env={}, archive=archive)  # no key needed
    result = found.run({"query": "harran bridge"}, ToolContext(workspace=tmp_path))
    assert not result.is_error
    assert result.output == (
        "Results for 'harran bridge':\n"
        "1. Harran Bridge\n   http://bridge.example/\n   Opened 1887.\n"
        "2. Span\n   http://span.example/\n   148 & 142 m"
    )
    [request] = _SearXNG.seen
    assert request["query"] == {"q": ["harran bridge"], "format": ["json"]}
    assert "Authorization" not in request
    assert "X-Subscription-Token" not in request
    [record] = archive.records()
    assert (record.kind, record.content_type) == ("search", "application/json")
    assert record.url == f"{searxng}?q=harran+bridge&format=json"
    assert b'"Opened 1887."' in archive.body(record)


def test_a_searxng_key_when_named_is_a_bearer_token(searxng: str, tmp_path: Path) -> None:
    settings = WebSearchConfig(provider="searxng", endpoint=searxng, api_key_env="SX_KEY")
    found = web_search_tool(settings, env={"SX_KEY": "sx-secret"})
    result = found.run({"query": "q"}, ToolContext(workspace=tmp_path))
    assert not result.is_error
    assert _SearXNG.seen[0]["Authorization"] == "Bearer sx-secret"
    assert "sx-secret" not in result.output
    with pytest.raises(ConfigError, match="SX_KEY is not set"):
        web_search_tool(settings, env={})


def test_the_provider_decides_the_defaults() -> None:
    brave = WebSearchConfig()
    assert (brave.address, brave.key_env) == (BRAVE_ENDPOINT, "BRAVE_API_KEY")
    with pytest.raises(ConfigError, match="endpoint: the searxng provider needs its endpoint"):
        web_search_tool(WebSearchConfig(provider="searxng"))
    with pytest.raises(ConfigError, match="'brave' or 'searxng', got 'bing'"):
        WebSearchConfig(provider="bing")
