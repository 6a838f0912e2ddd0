"""Web tools for research loops: ``fetch_url`` reads a page as Markdown, within limits.

Only hosts on the allow-list are fetched (a domain allows its subdomains; ``"*"`` allows any),
and every redirect is checked against it before it is followed. A page larger than
``max_bytes`` is cut there, a fetch that takes longer than ``timeout`` seconds in all is
stopped, and both are said in the observation. HTML is reduced to its main content as Markdown
by trafilatura (navigation, footers and scripts left out); text, Markdown and JSON are shown as
they are; anything else is refused.

Requires the ``web`` extra (``pip install 'harness[web]'``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

from harness.core.errors import ConfigError, ToolError
from harness.tools.toolkit import Tool, tool

if TYPE_CHECKING:
    import httpx

MAX_REDIRECTS = 5
_TEXT_TYPES = ("text/plain", "text/markdown", "application/json", "text/csv", "text/xml")
_HTML_TYPES = ("text/html", "application/xhtml+xml")


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
        if self.max_bytes < 1 or self.timeout <= 0:
            raise ConfigError("max_bytes and timeout: must be positive")

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

    deadline = time.monotonic() + limits.timeout
    with httpx.Client(follow_redirects=False, timeout=limits.timeout) as client:
        for _ in range(MAX_REDIRECTS + 1):
            _check_url(url, limits)
            try:
                with client.stream("GET", url, headers={"Accept": "text/html, text/*"}) as reply:
                    if reply.is_redirect and "location" in reply.headers:
                        url = urljoin(url, reply.headers["location"])
                        continue
                    if reply.status_code >= 400:
                        raise ToolError(f"{url}: HTTP {reply.status_code} {reply.reason_phrase}")
                    body, cut = _read_limited(reply, limits, deadline)
                    return _render(url, reply, body, cut, limits)
            except httpx.TimeoutException:
                raise ToolError(_too_slow(url, limits)) from None
            except httpx.HTTPError as exc:
                raise ToolError(f"{url}: cannot fetch: {exc}") from None
    raise ToolError(f"{url}: more than {MAX_REDIRECTS} redirects")


def _check_url(url: str, limits: WebLimits) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ToolError(f"{url}: only http and https addresses can be fetched")
    if not limits.allows(parts.hostname):
        raise ToolError(
            f"{url}: {parts.hostname} is not an allowed domain "
            f"(allowed: {', '.join(limits.allow_domains)})"
        )


def _read_limited(reply: httpx.Response, limits: WebLimits, deadline: float) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    for chunk in reply.iter_bytes():  # as the bytes arrive
        if time.monotonic() > deadline:
            raise ToolError(_too_slow(str(reply.url), limits))
        chunks.append(chunk)
        size += len(chunk)
        if size >= limits.max_bytes:
            return b"".join(chunks)[: limits.max_bytes], True
    return b"".join(chunks), False


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
