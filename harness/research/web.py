"""Web tools for research loops: ``fetch_url`` reads a page as Markdown, within limits.

Only hosts on the allow-list are fetched (a domain allows its subdomains; ``"*"`` allows any
on the internet, :mod:`harness.research.web_peer`), and every redirect is checked against it
before it is followed. A page larger than
``max_bytes`` is cut there (counted as decompressed, while decompressing: a small gzip bomb
never grows past the limit), a fetch that takes longer than ``timeout`` seconds in all
(connection, headers and body, a server that drips them included) is stopped, and both are
said in the observation. HTML is reduced to its main content as Markdown
by trafilatura (navigation, footers and scripts left out), a PDF to its text by pypdf; text,
Markdown and JSON are shown as they are; anything else is refused.

The address asked passes the run's outbound redactor before it leaves (a secret the agent puts
in it is sent as ``[REDACTED]``). With an archive (see :mod:`harness.research.archive`), every
body read is kept there with its
address, time and headers, and the observation ends with its source id. ``read_source`` reads
an archived source again without the network; a replayed archive makes ``fetch_url`` answer
from it alone.

Requires the ``web`` extra (``pip install 'harness[web]'``).
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import socket
import ssl
import threading
import zlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from pydantic import Field

from harness.core.errors import ConfigError, MissingExtra, ToolError
from harness.core.redact import Redactor
from harness.core.section import Section, named_errors
from harness.research.archive import ArchivedFetch, SourceArchive
from harness.research.extract import is_readable, media_type, shown_text
from harness.research.web_peer import peer_guard, refuse_resolved
from harness.research.web_search import WebSearchConfig
from harness.tools.toolkit import Tool, tool

if TYPE_CHECKING:
    import httpx

MAX_REDIRECTS = 5
_PORTS = {"http": 80, "https": 443}
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
"""The content encodings asked for, by what ``zlib`` needs to read each."""


@named_errors("")
class WebConfig(Section):
    """``[web]``: ``fetch_url`` for ``allow_domains`` (their subdomains too), ``web_search``."""

    allow_domains: list[str] | None = Field(None, min_length=1)
    max_bytes: int = Field(2_000_000, ge=1, le=100_000_000)
    timeout: float = Field(20, gt=0, le=600)
    search: WebSearchConfig | None = None
    replay: str | None = Field(None, min_length=1)  # an archive folder: fetch_url reads it only

    def names(self, host: str) -> bool:
        """Whether an entry other than ``"*"`` allows ``host`` (only such an entry reaches an
        address of this machine or its private network: :mod:`harness.research.web_peer`)."""
        host = host.lower().rstrip(".")
        return any(
            host == domain or host.endswith("." + domain)
            for domain in (entry.lower().strip("[]") for entry in self.allow_domains or ())
            if domain != "*"
        )


def check_domains(allow_domains: list[str] | None) -> None:
    """A :class:`ConfigError` naming ``allow_domains`` unless it lists host names only."""
    if not allow_domains:
        raise ConfigError('allow_domains: list the domains to fetch from (["*"] for any)')
    for domain in allow_domains:
        bare = domain.strip("[]")
        if domain != "*" and (not domain or "/" in domain or (":" in bare and not _ip(bare))):
            raise ConfigError(
                f"allow_domains: {domain!r} is not a host name (no scheme, port or path)"
            )


def fetch_url_tool(
    limits: WebConfig,
    archive: SourceArchive | None = None,
    *,
    replay: SourceArchive | None = None,
    redact: Callable[[str], str] | None = None,
) -> Tool:
    """The ``fetch_url`` tool, bound to ``limits`` (which must name ``allow_domains``); what it
    reads is kept in ``archive``.

    With ``replay``, pages are read from that archive only, never from the network. Every
    address asked passes ``redact``, the run's outbound redactor (None: the secrets of the
    environment).
    """
    check_domains(limits.allow_domains)
    outbound = redact or Redactor().redact_text
    try:
        import httpx  # noqa: F401 - fail at set-up, not at the first call
        import pypdf  # noqa: F401
        import trafilatura  # noqa: F401
    except ImportError as exc:
        raise MissingExtra("web", str(exc.name), "web") from exc

    @tool
    def fetch_url(url: str) -> str:
        """Fetch a web page or PDF and return its main content as Markdown (links kept).

        Args:
            url: An http or https address on an allowed domain.
        """
        url = outbound(url)
        if replay is not None:
            return replayed_page(url, limits, replay, archive)
        return fetch_page(url, limits, archive)

    return fetch_url


def read_source_tool(archive: SourceArchive) -> Tool:
    """The ``read_source`` tool: an archived source's text again, by id or address, offline."""

    @tool
    def read_source(source: str) -> str:
        """Read a source fetched earlier in this run again, from the archive (no network).

        Args:
            source: The source's id (s-...) or the address it was fetched from.
        """
        record = archive.find(source)
        if record is None:
            raise ToolError(f"{source}: not in this run's archive; fetch it first")
        body = _archived(archive, record)
        return _shown(record, _text(record.url, body, record.content_type, record.encoding), None)

    return read_source


def replayed_page(
    url: str, limits: WebConfig, replay: SourceArchive, archive: SourceArchive | None = None
) -> str:
    """``url`` as :func:`fetch_page` showed it, from the archive ``replay`` (kept again in
    ``archive``); a :class:`ToolError` when it was never archived there."""
    _check_url(url, limits)
    record = replay.find(url)
    if record is None:
        raise ToolError(f"{url}: not in the replayed archive {replay.folder} (offline)")
    body = _archived(replay, record)
    if archive is not None:
        record = archive.add(
            record.url, body, requested=url, status=record.status, headers=record.headers,
            encoding=record.encoding, cut=record.cut,
        )  # fmt: skip
    text = _text(url, body, record.content_type, record.encoding)
    return _shown(record, text, limits.max_bytes if record.cut else None)


def fetch_page(url: str, limits: WebConfig, archive: SourceArchive | None = None) -> str:
    """``url`` as readable text, following allowed redirects; a :class:`ToolError` otherwise.

    The body is kept in ``archive`` when one is given, and the text ends with its source id.
    """
    import httpx

    requested = url
    headers = {
        "Accept": "text/html, text/*, application/pdf",
        "Accept-Encoding": ", ".join(_WBITS),
    }
    with (
        _Deadline(limits.timeout) as deadline,
        httpx.Client(follow_redirects=False, timeout=limits.timeout, verify=_tls()) as client,
    ):
        for _ in range(MAX_REDIRECTS + 1):
            named = _check_url(url, limits)
            target = httpx.URL(url)
            host = target.raw_host.decode("ascii")  # as the connection names it
            if not named:
                refuse_resolved(url, host, target.port or _PORTS[target.scheme])
            trace = {"trace": peer_guard(url, host, named, deadline.trace)}
            try:
                with client.stream("GET", url, headers=headers, extensions=trace) as reply:
                    if reply.is_redirect and "location" in reply.headers:
                        url = urljoin(url, reply.headers["location"])
                        continue
                    if reply.status_code >= 400:
                        raise ToolError(f"{url}: HTTP {reply.status_code} {reply.reason_phrase}")
                    kind = media_type(reply.headers.get("content-type"))
                    if not is_readable(kind):
                        raise ToolError(f"{url}: {kind} is not text; fetch_url reads pages, "
                                        "PDFs and text files")  # fmt: skip
                    body, cut = _read_limited(reply, limits)
                    deadline.check(url, limits)  # a cut connection may look like a short page
                    text = _text(url, body, kind, reply.encoding)
                    record = None
                    if archive is not None:
                        record = archive.add(
                            url, body, requested=requested, status=reply.status_code,
                            headers=reply.headers, encoding=reply.encoding, cut=cut,
                        )  # fmt: skip
                    return _shown(record, text, limits.max_bytes if cut else None, url=url)
            except httpx.HTTPError as exc:
                deadline.check(url, limits)
                if isinstance(exc, httpx.TimeoutException):
                    raise ToolError(_too_slow(url, limits)) from None
                raise ToolError(f"{url}: cannot fetch: {exc}") from None
    raise ToolError(f"{url}: more than {MAX_REDIRECTS} redirects")


@functools.cache
def _tls() -> ssl.SSLContext:
    """The TLS settings of every fetch (httpx's defaults), made once: loading the certificate
    authorities takes longer than fetching a small page."""
    import httpx

    return httpx.create_ssl_context()


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

    def check(self, url: str, limits: WebConfig) -> None:
        if self.expired.is_set():
            raise ToolError(_too_slow(url, limits))

    def _expire(self) -> None:
        self.expired.set()
        with self._lock:
            if self._socket is not None:
                with contextlib.suppress(OSError):  # already closed
                    self._socket.shutdown(socket.SHUT_RDWR)


def _ip(text: str) -> bool:
    """Whether ``text`` is an IP address (an IPv6 one may stand on the allow-list)."""
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _check_url(url: str, limits: WebConfig) -> bool:
    """Refuse ``url`` unless it is http(s) on an allowed host; whether an entry names its host."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ToolError(f"{url}: only http and https addresses can be fetched")
    named = limits.names(parts.hostname)
    allowed = limits.allow_domains or []
    if not named and "*" not in allowed:
        raise ToolError(
            f"{url}: {parts.hostname} is not an allowed domain (allowed: {', '.join(allowed)})"
        )
    return named


def _read_limited(reply: httpx.Response, limits: WebConfig) -> tuple[bytes, bool]:
    """The body, decompressed, up to ``max_bytes``; and whether there was more."""
    body = bytearray()
    for chunk in _decoded(reply, limits.max_bytes + 1):  # as the bytes arrive
        body += chunk
        if len(body) > limits.max_bytes:
            return bytes(body[: limits.max_bytes]), True
    return bytes(body), False


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


def _archived(archive: SourceArchive, record: ArchivedFetch) -> bytes:
    """``record``'s archived bytes; a :class:`ToolError` when they are not as kept."""
    try:
        return archive.body(record)
    except ConfigError as exc:
        raise ToolError(str(exc)) from None


def _text(url: str, body: bytes, kind: str, encoding: str | None) -> str:
    """The text the agent is shown; a :class:`ToolError` naming ``url`` when there is none."""
    try:
        return shown_text(body, kind, encoding)
    except ToolError as exc:
        raise ToolError(f"{url}: {exc}") from None


def _shown(
    record: ArchivedFetch | None, text: str, cut_at: int | None, *, url: str | None = None
) -> str:
    """What the agent sees: the address, the text, whether it was cut at ``cut_at`` bytes, and
    the source id."""
    address = record.url if record is not None else url
    note = f"\n\n[cut: the page is larger than {cut_at} bytes]" if cut_at else ""
    source = f"\n\n[archived as {record.id}]" if record is not None else ""
    return f"# {address}\n\n{text.strip() or '(no readable text)'}{note}{source}"


def _too_slow(url: str, limits: WebConfig) -> str:
    return f"{url}: no complete answer within {limits.timeout:g}s (timeout)"
