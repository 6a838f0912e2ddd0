"""Web tools for research loops: ``fetch_url`` reads a page as Markdown, within limits.

Only hosts on the allow-list are fetched (a domain allows its subdomains; ``"*"`` allows any),
and every redirect is checked against it before it is followed. A page larger than
``max_bytes`` is cut there (counted as decompressed, while decompressing: a small gzip bomb
never grows past the limit), a fetch that takes longer than ``timeout`` seconds in all
(connection, headers and body, a server that drips them included) is stopped, and both are
said in the observation. HTML is reduced to its main content as Markdown
by trafilatura (navigation, footers and scripts left out); text, Markdown and JSON are shown as
they are; anything else is refused.

Requires the ``web`` extra (``pip install 'harness[web]'``).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from harness.core.errors import ConfigError, ToolError
from harness.core.validation import positive_finite
from harness.tools.toolkit import Tool, tool

if TYPE_CHECKING:
    import httpx

MAX_REDIRECTS = 5
_TEXT_TYPES = ("text/plain", "text/markdown", "application/json", "text/csv", "text/xml")
_HTML_TYPES = ("text/html", "application/xhtml+xml")
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
"""The content encodings asked for, by what ``zlib`` needs to read each."""


@dataclass(frozen=True)
class WebLimits:
    """Where ``fetch_url`` may go and how much it may take."""

    allow_domains: Sequence[str]
    max_bytes: int = 2_000_000
    timeout: float = 20.0

    def __post_init__(self) -> None:
        if not self.allow_domains:
            raise ConfigError('allow_domains: list the domains to fetch from (["*"] for any)')
        for domain in self.allow_domains:
            if domain != "*" and (not domain or "/" in domain or ":" in domain.strip("[]")):
                raise ConfigError(
                    f"allow_domains: {domain!r} is not a host name (no scheme, port or path)"
                )
        if self.max_bytes < 1:
            raise ConfigError(f"max_bytes: must be positive, got {self.max_bytes!r}")
        positive_finite("timeout", self.timeout)

    def allows(self, host: str) -> bool:
        host = host.lower().rstrip(".")
        return any(
            domain == "*" or host == domain.lower() or host.endswith("." + domain.lower())
            for domain in self.allow_domains
        )


def fetch_url_tool(limits: WebLimits) -> Tool:
    """The ``fetch_url`` tool, bound to ``limits``."""
    try:
        import httpx  # noqa: F401 - fail at set-up, not at the first call
        import trafilatura  # noqa: F401
    except ImportError as exc:
        raise ConfigError(f"web: {exc.name} is not installed; pip install 'harness[web]'") from exc

    @tool
    def fetch_url(url: str) -> str:
        """Fetch a web page and return its main content as Markdown (links kept).

        Args:
            url: An http or https address on an allowed domain.
        """
        return fetch_page(url, limits)

    return fetch_url


def fetch_page(url: str, limits: WebLimits) -> str:
    """``url`` as readable text, following allowed redirects; a :class:`ToolError` otherwise."""
    import httpx

    headers = {"Accept": "text/html, text/*", "Accept-Encoding": ", ".join(_WBITS)}
    with (
        _Deadline(limits.timeout) as deadline,
        httpx.Client(follow_redirects=False, timeout=limits.timeout) as client,
    ):
        for _ in range(MAX_REDIRECTS + 1):
            _check_url(url, limits)
            trace = {"trace": deadline.trace}
            try:
                with client.stream("GET", url, headers=headers, extensions=trace) as reply:
                    if reply.is_redirect and "location" in reply.headers:
                        url = urljoin(url, reply.headers["location"])
                        continue
                    if reply.status_code >= 400:
                        raise ToolError(f"{url}: HTTP {reply.status_code} {reply.reason_phrase}")
                    body, cut = _read_limited(reply, limits)
                    deadline.check(url, limits)  # a cut connection may look like a short page
                    return _render(url, reply, body, cut, limits)
            except httpx.HTTPError as exc:
                deadline.check(url, limits)
                if isinstance(exc, httpx.TimeoutException):
                    raise ToolError(_too_slow(url, limits)) from None
                raise ToolError(f"{url}: cannot fetch: {exc}") from None
    raise ToolError(f"{url}: more than {MAX_REDIRECTS} redirects")


class _Deadline:
    """Ends a fetch ``seconds`` after it starts, whatever it is waiting for: the connection's
    socket is shut down then (httpx's own timeouts bound each read, not the whole answer)."""

    def __init__(self, seconds: float) -> None:
        self.expired = threading.Event()
        self._socket: socket.socket | None = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> _Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()

    def trace(self, event: str, info: dict[str, Any]) -> None:
        """httpcore's ``trace`` extension: keeps the socket of each new connection."""
        if event in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            stream = info.get("return_value")
            with self._lock:
                self._socket = stream.get_extra_info("socket") if stream is not None else None
            if self.expired.is_set():
                self._expire()

    def check(self, url: str, limits: WebLimits) -> None:
        if self.expired.is_set():
            raise ToolError(_too_slow(url, limits))

    def _expire(self) -> None:
        self.expired.set()
        with self._lock:
            if self._socket is not None:
                with contextlib.suppress(OSError):  # already closed
                    self._socket.shutdown(socket.SHUT_RDWR)


def _check_url(url: str, limits: WebLimits) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ToolError(f"{url}: only http and https addresses can be fetched")
    if not limits.allows(parts.hostname):
        raise ToolError(
            f"{url}: {parts.hostname} is not an allowed domain "
            f"(allowed: {', '.join(limits.allow_domains)})"
        )


def _read_limited(reply: httpx.Response, limits: WebLimits) -> tuple[bytes, bool]:
    """The body, decompressed, up to ``max_bytes``; and whether there was more."""
    chunks: list[bytes] = []
    size = 0
    for chunk in _decoded(reply, limits.max_bytes + 1):  # as the bytes arrive
        chunks.append(chunk)
        size += len(chunk)
        if size > limits.max_bytes:
            return b"".join(chunks)[: limits.max_bytes], True
    return b"".join(chunks), False


def _decoded(reply: httpx.Response, most: int) -> Iterator[bytes]:
    """The body's bytes as they arrive, decompressed a piece of at most ``most`` bytes at a
    time (never all of a compressed chunk at once)."""
    encoding = reply.headers.get("content-encoding", "identity").strip().lower()
    if encoding in ("", "identity"):
        yield from reply.iter_raw()
        return
    if encoding not in _WBITS:
        raise ToolError(f"{reply.url}: content encoding {encoding!r} was not asked for")
    decoder = zlib.decompressobj(_WBITS[encoding])
    for chunk in reply.iter_raw():
        data = chunk
        while data and not decoder.eof:
            try:
                piece = decoder.decompress(data, most)
            except zlib.error as exc:
                raise ToolError(f"{reply.url}: the {encoding} body is corrupt: {exc}") from None
            yield piece
            data = decoder.unconsumed_tail


def _render(url: str, reply: httpx.Response, body: bytes, cut: bool, limits: WebLimits) -> str:
    kind = reply.headers.get("content-type", "text/html").split(";")[0].strip().lower()
    text = body.decode(reply.encoding or "utf-8", errors="replace")
    if kind in _HTML_TYPES:
        text = _markdown(text)
    elif not (kind in _TEXT_TYPES or kind.startswith("text/")):
        raise ToolError(f"{url}: {kind} is not text; fetch_url reads pages and text files")
    note = f"\n\n[cut: the page is larger than {limits.max_bytes} bytes]" if cut else ""
    return f"# {url}\n\n{text.strip() or '(no readable text)'}{note}"


def _markdown(html: str) -> str:
    import trafilatura
    from trafilatura.settings import use_config

    settings = use_config()
    settings.set("DEFAULT", "MIN_EXTRACTED_SIZE", "1")  # short pages are pages too
    settings.set("DEFAULT", "MAX_FILE_SIZE", str(len(html) + 1))  # our own limit was applied
    settings.set("DEFAULT", "EXTRACTION_TIMEOUT", "0")  # its timeout uses signals: main thread only
    extracted = trafilatura.extract(
        html, output_format="markdown", include_links=True, include_formatting=True,
        include_tables=True, favor_recall=True, config=settings,
    )  # fmt: skip
    return extracted if extracted else str(trafilatura.html2txt(html))


def _too_slow(url: str, limits: WebLimits) -> str:
    return f"{url}: no complete answer within {limits.timeout:g}s (timeout)"
