"""``allow_domains = ["*"]`` reaches the internet, not this machine or its private network, by
whatever spelling of the address: the check is on the address the connection reached."""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from harness.core.errors import ConfigError, ToolError
from harness.research.web import WebConfig, fetch_url_tool
from harness.research.web_peer import Trace, is_global, peer_guard, refuse_resolved
from harness.tools.toolkit import ToolContext

REFUSED = "an address of this machine or its private network; allow_domains reaches it only by"


class _Page(BaseHTTPRequestHandler):
    """``/redirect/<target, ~ for />`` redirects; anything else is a small page. Every request
    that arrives is counted."""

    seen: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        self.seen.append(self.path)
        if self.path.startswith("/redirect/"):
            self.send_response(302)
            self.send_header("Location", self.path.removeprefix("/redirect/").replace("~", "/"))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = b"internal notes: the admin password is hunter2"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def port() -> Iterator[int]:
    """A page server on 127.0.0.1 (and so on 0.0.0.0 and ::ffff:127.0.0.1); its requests
    counted afresh."""
    _Page.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield server.server_port
    server.shutdown()
    server.server_close()


def fetch(url: str, *allowed: str) -> tuple[str, bool]:
    tool = fetch_url_tool(WebConfig(allow_domains=list(allowed)))
    result = tool.run({"url": url}, ToolContext(workspace="."))  # type: ignore[arg-type]
    return result.output, result.is_error


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "localhost", "LOCALHOST", "2130706433", "0x7f000001", "127.1", "0.0.0.0",
     "[::ffff:127.0.0.1]"],
)  # fmt: skip
def test_any_host_reaches_no_address_of_this_machine_however_spelled(port: int, host: str) -> None:
    output, is_error = fetch(f"http://{host}:{port}/notes", "*")
    assert is_error, output
    assert REFUSED in output
    assert "hunter2" not in output
    assert _Page.seen == []


def test_a_port_of_this_machine_is_refused_alike_open_or_closed(port: int) -> None:
    """No connection is made: an agent learns nothing of which local ports are open."""
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        closed = unused.getsockname()[1]  # bound, never listening: a connection is refused
        for url in (f"http://127.0.0.1:{port}/notes", f"http://127.0.0.1:{closed}/notes"):
            output, is_error = fetch(url, "*")
            assert is_error
            assert f": 127.0.0.1 is at 127.0.0.1, {REFUSED}" in output
            assert "Connection refused" not in output
    assert _Page.seen == []


def test_a_name_that_does_not_resolve_is_left_to_the_connection() -> None:
    assert refuse_resolved("http://nowhere.invalid/", "nowhere.invalid", 80) is None


def test_a_redirect_from_a_named_host_to_this_machine_is_refused_at_the_hop(port: int) -> None:
    target = f"http:~~127.0.0.1:{port}~notes"
    output, is_error = fetch(f"http://localhost:{port}/redirect/{target}", "localhost", "*")
    assert is_error, output
    assert f"http://127.0.0.1:{port}/notes: 127.0.0.1 is at 127.0.0.1, {REFUSED}" in output
    assert _Page.seen == [f"/redirect/{target}"]  # the first hop, named; never the second


@pytest.mark.parametrize("named", ["localhost", "127.0.0.1"])
def test_an_address_of_this_machine_is_reached_by_naming_its_host(port: int, named: str) -> None:
    output, is_error = fetch(f"http://{named}:{port}/notes", named, "*")
    assert not is_error, output
    assert "hunter2" in output
    assert _Page.seen == ["/notes"]


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("8.8.8.8", True), ("2001:4860:4860::8888", True), ("::ffff:8.8.8.8", True),
        ("127.0.0.1", False), ("127.8.9.10", False), ("::1", False), ("0.0.0.0", False),
        ("10.1.2.3", False), ("172.16.0.1", False), ("192.168.1.1", False),
        ("169.254.169.254", False), ("100.64.0.1", False), ("fc00::1", False),
        ("fe80::1%eth0", False), ("::ffff:10.0.0.1", False), ("::ffff:127.0.0.1", False),
        ("224.0.0.1", False), ("::ffff:224.0.0.1", False), ("ff02::1", False),
        ("240.0.0.1", False),
    ],
)  # fmt: skip
def test_only_addresses_of_the_internet_are_global(address: str, expected: bool) -> None:
    assert is_global(address) is expected


class _Stream:
    """A connection as httpcore's trace hands it over, to a peer at ``address``."""

    def __init__(self, address: str) -> None:
        self.address, self.closed = address, False

    def get_extra_info(self, name: str) -> object:
        assert name == "socket"
        return self

    def getpeername(self) -> tuple[str, int]:
        return (self.address, 443)

    def close(self) -> None:
        self.closed = True


def _connect(guard: Trace, host: str, stream: _Stream) -> None:
    guard("connection.connect_tcp.started", {"host": host, "port": 443})
    guard("connection.connect_tcp.complete", {"return_value": stream})


@pytest.mark.parametrize(
    ("named", "connected_to", "peer", "refused"),
    [
        (False, "docs.example", "93.184.216.34", False),  # on the internet
        (False, "docs.example", "10.0.0.7", True),  # a private network
        (True, "docs.example", "10.0.0.7", False),  # named on the list: an intranet host
        (False, "proxy.corp", "10.0.0.7", False),  # the connection is a proxy's
    ],
)
def test_the_guard_closes_a_connection_that_reached_no_internet_address(
    named: bool, connected_to: str, peer: str, refused: bool
) -> None:
    events: list[str] = []
    guard = peer_guard(
        "https://docs.example/a", "docs.example", named, lambda e, i: events.append(e)
    )
    stream = _Stream(peer)
    if refused:
        with pytest.raises(ToolError, match=f"docs.example is at {peer}, an address of this"):
            _connect(guard, connected_to, stream)
        assert events == [
            "connection.connect_tcp.started"
        ]  # the refused connection goes no further
    else:
        _connect(guard, connected_to, stream)
        assert events == ["connection.connect_tcp.started", "connection.connect_tcp.complete"]
    assert stream.closed is refused


def _ipv6_loopback() -> str | None:
    """Why ``::1`` cannot be served here, or None."""
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError as exc:
        return f"no IPv6 loopback: {exc}"
    return None


class _Server6(ThreadingHTTPServer):
    address_family = socket.AF_INET6


@pytest.mark.skipif(_ipv6_loopback() is not None, reason=str(_ipv6_loopback()))
@pytest.mark.parametrize("named", ["[::1]", "::1"])
def test_an_ipv6_address_may_be_named_and_is_reached_only_so(named: str) -> None:
    _Page.seen = []
    server = _Server6(("::1", 0), _Page)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    url = f"http://[::1]:{server.server_port}/notes"
    try:
        refused, is_error = fetch(url, "*")
        assert is_error
        assert f"::1 is at ::1, {REFUSED}" in refused
        output, is_error = fetch(url, named)
    finally:
        server.shutdown()
        server.server_close()
    assert not is_error, output
    assert "hunter2" in output
    assert _Page.seen == ["/notes"]


@pytest.mark.parametrize("entry", ["[::1]:80", "::1]x", "fe80::zz"])
def test_an_entry_that_is_neither_a_host_name_nor_an_address_is_refused(entry: str) -> None:
    with pytest.raises(ConfigError, match=f"allow_domains: {re.escape(repr(entry))} is not a host"):
        fetch_url_tool(WebConfig(allow_domains=[entry]))
