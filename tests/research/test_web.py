"""fetch_url against pages served on 127.0.0.1: Markdown out, limits kept, redirects checked."""

from __future__ import annotations

import threading
import time
import tracemalloc
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harness.core.errors import ConfigError
from harness.research.web import WebConfig, fetch_url_tool
from harness.tools import ToolContext

ARTICLE = b"""<html><head><title>Tides</title><script>var tracking = 1;</script></head>
<body><nav><a href="/">Home</a> | <a href="/about">About us</a></nav>
<article><h1>How tides work</h1>
<p>The <b>Moon</b> pulls the oceans; see <a href="https://example.org/moon">the Moon page</a>.</p>
<ul><li>Spring tides</li><li>Neap tides</li></ul>
<p>A second paragraph long enough for the extractor to keep it as content of the page.</p>
</article><footer>Copyright 2026 Example Press</footer></body></html>"""

BIG = b"<html><body><article>" + b"<p>" + b"tide " * 2_000_000 + b"</p></article></body></html>"


def _gzip_bomb(megabytes: int) -> bytes:
    """``megabytes`` MB of spaces, gzipped: a few hundred KB on the wire."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b" " * (1 << 20)
    return b"".join(packer.compress(block) for _ in range(megabytes)) + packer.flush()


BOMB = _gzip_bomb(300)


class _Pages(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        routes = {
            "/article": (200, "text/html; charset=utf-8", ARTICLE),
            "/short": (200, "text/html", b"<nav>Home</nav><h1>Tides</h1><p>The <b>Moon</b>.</p>"),
            "/notes.txt": (200, "text/plain", b"plain notes\nline two"),
            "/logo.png": (200, "image/png", b"\x89PNG\r\n\x1a\n"),
            "/big": (200, "text/html", BIG),
            "/missing": (404, "text/html", b"<p>nope</p>"),
        }
        if self.path.startswith("/redirect/"):
            self.send_response(302)
            self.send_header("Location", self.path.removeprefix("/redirect/").replace("~", "/"))
            self.end_headers()
            return
        if self.path == "/slow-headers":  # a byte every 0.3 s: no read ever waits 1 s
            for byte in b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Padding: " + b"x" * 40:
                if not self._send(bytes([byte])):
                    return
                time.sleep(0.3)
            return
        if self.path == "/bomb":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(BOMB)))
            self.end_headers()
            self._send(BOMB)
            return
        if self.path == "/slow":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            for _ in range(600):  # a minute of drips: only the timeout ends it sooner
                if not self._send(b"drip\n"):
                    return
                time.sleep(0.1)
            return
        status, kind, body = routes.get(self.path, (404, "text/plain", b"not here"))
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self._send(body)

    def _send(self, data: bytes) -> bool:
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):  # the client stopped reading: expected
            return False
        return True

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(workspace=tmp_path)


def fetch(url: str, ctx: ToolContext, **limits: object) -> tuple[str, bool]:
    settings = {"allow_domains": ["127.0.0.1"], **limits}
    result = fetch_url_tool(WebConfig(**settings)).run({"url": url}, ctx)  # type: ignore[arg-type]
    return result.output, result.is_error


def test_a_page_comes_back_as_markdown_of_its_main_content(site: str, ctx: ToolContext) -> None:
    output, is_error = fetch(f"{site}/article", ctx)
    assert not is_error
    assert output.startswith(f"# {site}/article\n")
    assert "# How tides work" in output
    assert "**Moon**" in output
    assert "[the Moon page](https://example.org/moon)" in output
    assert "- Spring tides" in output
    assert "About us" not in output  # navigation left out
    assert "Copyright" not in output
    assert "tracking" not in output
    assert "<p>" not in output


def test_a_short_page_is_still_markdown(site: str, ctx: ToolContext) -> None:
    output, is_error = fetch(f"{site}/short", ctx)
    assert not is_error
    assert output.startswith(f"# {site}/short\n\n")
    assert output.endswith("The **Moon**.")  # formatting kept, not the bare-text fallback
    assert "Home" not in output


def test_text_is_kept_and_binary_refused(site: str, ctx: ToolContext) -> None:
    assert fetch(f"{site}/notes.txt", ctx)[0].endswith("plain notes\nline two")
    output, is_error = fetch(f"{site}/logo.png", ctx)
    assert is_error
    assert "image/png is not text" in output
    output, is_error = fetch(f"{site}/missing", ctx)
    assert is_error
    assert "HTTP 404" in output


def test_a_ten_megabyte_page_is_cut_to_the_limit(site: str, ctx: ToolContext) -> None:
    assert len(BIG) > 10_000_000
    started = time.monotonic()
    output, is_error = fetch(f"{site}/big", ctx, max_bytes=100_000)
    assert not is_error
    assert output.endswith("[cut: the page is larger than 100000 bytes]")
    assert "tide tide" in output
    assert output.count("tide") <= 100_000 // 5
    assert len(output) <= 20_000  # and the observation cap holds
    assert time.monotonic() - started < 30


def test_a_slow_page_is_stopped_at_the_timeout(site: str, ctx: ToolContext) -> None:
    started = time.monotonic()
    output, is_error = fetch(f"{site}/slow", ctx, timeout=1)
    assert is_error
    assert "no complete answer within 1s (timeout)" in output
    assert time.monotonic() - started < 30  # not the page's minute


def test_headers_sent_slowly_are_stopped_at_the_timeout(site: str, ctx: ToolContext) -> None:
    """Before, only the body was timed: this server's headers took 25 s against timeout=1."""
    started = time.monotonic()
    output, is_error = fetch(f"{site}/slow-headers", ctx, timeout=1)
    assert is_error
    assert output == f"error: {site}/slow-headers: no complete answer within 1s (timeout)"
    assert time.monotonic() - started < 20  # not the headers' 28 s


def test_a_gzip_bomb_is_cut_while_decompressing(site: str, ctx: ToolContext) -> None:
    """300 MB of spaces in a 300 KB gzip body: decompressed a bounded piece at a time."""
    assert len(BOMB) < 400_000
    tracemalloc.start()
    try:
        output, is_error = fetch(f"{site}/bomb", ctx, max_bytes=100_000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert not is_error
    assert (
        output
        == f"# {site}/bomb\n\n(no readable text)\n\n[cut: the page is larger than 100000 bytes]"
    )
    assert peak < 8_000_000  # before: a whole compressed chunk decompressed at once, 60+ MB


def test_redirects_are_followed_only_to_allowed_hosts(site: str, ctx: ToolContext) -> None:
    output, is_error = fetch(f"{site}/redirect/~article", ctx)
    assert not is_error
    assert output.startswith(f"# {site}/article")  # the page it ended on
    assert "How tides work" in output
    output, is_error = fetch(f"{site}/redirect/http:~~evil.example~steal", ctx)
    assert is_error
    assert "http://evil.example/steal: evil.example is not an allowed domain" in output
    output, is_error = fetch(f"{site}/redirect/file:~~~etc~passwd", ctx)
    assert is_error
    assert "only http and https" in output
    output, is_error = fetch(
        f"{site}/redirect/~redirect~~redirect~~redirect~~redirect~~redirect~~redirect~~article", ctx
    )
    assert is_error
    assert "more than 5 redirects" in output


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://localhost.evil.example/", "localhost.evil.example is not an allowed domain"),
        ("http://127.0.0.1.evil.example/", "is not an allowed domain"),
        ("ftp://127.0.0.1/x", "only http and https"),
        ("http://user@evil.example@127.0.0.2/", "127.0.0.2 is not an allowed domain"),
    ],
)
def test_hosts_off_the_list_are_refused_before_connecting(
    url: str, message: str, ctx: ToolContext
) -> None:
    output, is_error = fetch(url, ctx)
    assert is_error
    assert message in output


def test_a_domain_allows_its_subdomains_only() -> None:
    limits = WebConfig(allow_domains=["example.org"])
    assert limits.names("example.org")
    assert limits.names("docs.example.org")
    assert limits.names("DOCS.Example.org.")
    assert not limits.names("badexample.org")
    assert not limits.names("example.org.evil.net")
    assert not WebConfig(allow_domains=["*"]).names("anything.net")  # "*" allows, names none


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"allow_domains": None}, "list the domains"),
        ({"allow_domains": ["https://example.org"]}, "is not a host name"),
        ({"allow_domains": ["example.org/docs"]}, "is not a host name"),
        (
            {"allow_domains": ["x.org"], "max_bytes": 0},
            "^max_bytes: must be an integer from 1 to 100000000, got 0$",
        ),
        (
            {"allow_domains": ["x.org"], "max_bytes": 10**8 + 1},
            "^max_bytes: must be an integer from 1 to 100000000",
        ),
    ],
)
def test_bad_limits_are_refused(settings: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        fetch_url_tool(WebConfig(**settings))
