"""``web_search``: a search provider's HTTP API as a tool, off unless configured.

Providers, chosen by ``provider``:

- ``brave``: the Brave Search API; its key is required.
- ``searxng``: a SearXNG instance's JSON API (``/search?format=json``), which can be
  self-hosted; no key unless the instance wants one (sent as a bearer token).

A key is read from the environment when the tool is made (a missing key is a
:class:`ConfigError` naming the variable), sent only to the provider's endpoint, and never shown
to the model. Results come back as a numbered list of title, address and snippet; with an
archive, each answer is kept there as the provider sent it.

Requires the ``web`` extra (``pip install 'harness[web]'``).
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from harness.core.errors import ConfigError, MissingExtra, ToolError
from harness.core.redact import Redactor
from harness.core.section import Section, named_errors
from harness.research.archive import SourceArchive
from harness.sandbox.command_env import EnvName
from harness.tools.toolkit import Tool, tool

BRAVE_ENDPOINT = "https://api.search.brave.com/res/v1/web/search"
_TAG = re.compile(r"<[^>]+>")

Results = list[dict[str, str]]


@dataclass(frozen=True)
class Provider:
    """How one search API is asked and how its answer reads."""

    endpoint: str | None  # the default endpoint; None: loop.toml must name one
    key_env: str | None  # the default key variable; None: no key unless one is named
    params: Callable[[str, int], dict[str, str | int]]
    key_header: Callable[[str], dict[str, str]]
    results: Callable[[Any], Results]


PROVIDERS: dict[str, Provider] = {
    "brave": Provider(
        endpoint=BRAVE_ENDPOINT,
        key_env="BRAVE_API_KEY",
        params=lambda query, count: {"q": query, "count": count},
        key_header=lambda key: {"X-Subscription-Token": key},
        results=lambda data: _listed(
            (data.get("web") or {}).get("results") or [], snippet="description"
        ),
    ),
    "searxng": Provider(
        endpoint=None,
        key_env=None,
        params=lambda query, count: {"q": query, "format": "json"},
        key_header=lambda key: {"Authorization": f"Bearer {key}"},
        results=lambda data: _listed(data.get("results") or [], snippet="content"),
    ),
}


@named_errors("")
class WebSearchConfig(Section):
    """``[web.search]``: gives the agent ``web_search`` through a provider's HTTP API.

    ``endpoint`` and ``api_key_env`` default to the provider's own (SearXNG has no default
    endpoint: name your instance's ``/search`` address).
    """

    provider: Literal["brave", "searxng"] = "brave"
    # None: the provider's own (brave: BRAVE_API_KEY; searxng: no key)
    api_key_env: EnvName | None = None
    # None: the provider's own (brave: its API; searxng has none: name the instance's /search)
    endpoint: str | None = Field(None, pattern=r"^https?://")
    max_results: int = Field(5, ge=1, le=20)
    timeout: float = Field(20, gt=0, le=600)

    @property
    def api(self) -> Provider:
        return PROVIDERS[self.provider]

    @property
    def address(self) -> str:
        """The endpoint asked: loop.toml's, else the provider's own ("" when neither is set)."""
        return self.endpoint or self.api.endpoint or ""

    @property
    def key_env(self) -> str | None:
        """The variable holding the key, or None when this provider is asked without one."""
        return self.api_key_env or self.api.key_env


def web_search_tool(
    settings: WebSearchConfig,
    *,
    env: dict[str, str] | None = None,
    archive: SourceArchive | None = None,
    redact: Callable[[str], str] | None = None,
) -> Tool:
    """The ``web_search`` tool; the key is taken from ``env`` (default: this process's). Every
    query passes ``redact``, the run's outbound redactor (None: the secrets of the environment)."""
    outbound = redact or Redactor().redact_text
    if not settings.address:
        raise ConfigError(f"endpoint: the {settings.provider} provider needs its endpoint named")
    key = None
    if settings.key_env is not None:
        key = (os.environ if env is None else env).get(settings.key_env, "").strip()
        if not key:
            raise ConfigError(
                f"api_key_env: the environment variable {settings.key_env} is not set "
                f"(the {settings.provider} search key)"
            )
    try:
        import httpx  # noqa: F401 - fail at set-up, not at the first call
    except ImportError as exc:
        raise MissingExtra("web", "httpx", "web") from exc

    @tool
    def web_search(query: str) -> str:
        """Search the web; returns the top results as title, address and snippet.

        Args:
            query: What to search for, as you would type it into a search engine.
        """
        return search(outbound(query), settings, key, archive)

    return web_search


def search(
    query: str, settings: WebSearchConfig, key: str | None, archive: SourceArchive | None = None
) -> str:
    """The results for ``query`` as text; a :class:`ToolError` when the provider fails."""
    import httpx

    if not query.strip():
        raise ToolError("web_search: the query is empty")
    headers = {"Accept": "application/json", **(settings.api.key_header(key) if key else {})}
    try:
        reply = httpx.get(
            settings.address,
            params=settings.api.params(query, settings.max_results),
            headers=headers,
            timeout=settings.timeout,
            follow_redirects=False,
        )
    except httpx.TimeoutException:
        raise ToolError(f"web_search: no answer within {settings.timeout:g}s") from None
    except httpx.HTTPError as exc:
        raise ToolError(f"web_search: the search provider cannot be reached: {exc}") from None
    if reply.status_code == 429:
        wait = reply.headers.get("retry-after")
        raise ToolError(
            "web_search: rate limited by the provider" + (f"; retry after {wait}s" if wait else "")
        )
    if reply.status_code in (401, 403):
        raise ToolError(f"web_search: the provider refused the key (HTTP {reply.status_code})")
    if reply.status_code >= 300:
        raise ToolError(f"web_search: the provider answered HTTP {reply.status_code}")
    try:
        results = settings.api.results(reply.json())
    except (ValueError, TypeError, AttributeError) as exc:
        raise ToolError(f"web_search: the provider's answer is not readable: {exc}") from None
    if archive is not None:
        archive.add(str(reply.url), reply.content, headers=reply.headers, kind="search")
    return render_results(query, results[: settings.max_results])


def _listed(found: Any, *, snippet: str) -> Results:
    return [
        {
            "title": _plain(item.get("title", "")),
            "url": str(item.get("url", "")),
            "snippet": _plain(item.get(snippet, "")),
        }
        for item in found
        if isinstance(item, dict) and item.get("url")
    ]


def render_results(query: str, results: list[dict[str, str]]) -> str:
    if not results:
        return f"No results for {query!r}."
    lines = [f"Results for {query!r}:"]
    for number, result in enumerate(results, 1):
        lines.append(f"{number}. {result['title'] or '(no title)'}\n   {result['url']}")
        if result["snippet"]:
            lines.append(f"   {result['snippet']}")
    return "\n".join(lines)


def _plain(text: object) -> str:
    return " ".join(html.unescape(_TAG.sub("", str(text))).split())
