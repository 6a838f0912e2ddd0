"""``web_search``: a search provider's HTTP API as a tool (Brave Search), off unless configured.

The key is read from the environment when the tool is made (a missing key is a
:class:`ConfigError` naming the variable), sent only to the provider's endpoint, and never shown
to the model. Results come back as a numbered list of title, address and snippet.

Requires the ``web`` extra (``pip install 'harness[web]'``).
"""

from __future__ import annotations

import html
import os
import re
from dataclasses import dataclass
from typing import Any

from harness.core.errors import ConfigError, ToolError
from harness.core.validation import positive_finite
from harness.tools.toolkit import Tool, tool

BRAVE_ENDPOINT = "https://api.search.brave.com/res/v1/web/search"
_TAG = re.compile(r"<[^>]+>")


@dataclass(frozen=True)
class SearchSettings:
    """Which provider to ask, with which key, for how many results."""

    provider: str = "brave"
    api_key_env: str = "BRAVE_API_KEY"
    endpoint: str = BRAVE_ENDPOINT
    max_results: int = 5
    timeout: float = 20.0

    def __post_init__(self) -> None:
        if self.provider != "brave":
            raise ConfigError(f"provider: {self.provider!r} is not supported (use 'brave')")
        if not 1 <= self.max_results <= 20:
            raise ConfigError(f"max_results: must be from 1 to 20, got {self.max_results}")
        if not self.endpoint.startswith(("https://", "http://")):
            raise ConfigError(f"endpoint: {self.endpoint!r} is not an http(s) address")
        positive_finite("timeout", self.timeout)


def web_search_tool(settings: SearchSettings, *, env: dict[str, str] | None = None) -> Tool:
    """The ``web_search`` tool; the key is taken from ``env`` (default: this process's)."""
    key = (os.environ if env is None else env).get(settings.api_key_env, "").strip()
    if not key:
        raise ConfigError(
            f"api_key_env: the environment variable {settings.api_key_env} is not set "
            f"(the {settings.provider} search key)"
        )
    try:
        import httpx  # noqa: F401 - fail at set-up, not at the first call
    except ImportError as exc:
        raise ConfigError("web: httpx is not installed; pip install 'harness[web]'") from exc

    @tool
    def web_search(query: str) -> str:
        """Search the web; returns the top results as title, address and snippet.

        Args:
            query: What to search for, as you would type it into a search engine.
        """
        return search(query, settings, key)

    return web_search


def search(query: str, settings: SearchSettings, key: str) -> str:
    """The results for ``query`` as text; a :class:`ToolError` when the provider fails."""
    import httpx

    if not query.strip():
        raise ToolError("web_search: the query is empty")
    try:
        reply = httpx.get(
            settings.endpoint,
            params={"q": query, "count": settings.max_results},
            headers={"Accept": "application/json", "X-Subscription-Token": key},
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
        results = _results(reply.json())
    except (ValueError, TypeError, AttributeError) as exc:
        raise ToolError(f"web_search: the provider's answer is not readable: {exc}") from None
    return render_results(query, results[: settings.max_results])


def _results(data: Any) -> list[dict[str, str]]:
    found = (data.get("web") or {}).get("results") or []
    return [
        {
            "title": _plain(item.get("title", "")),
            "url": str(item.get("url", "")),
            "snippet": _plain(item.get("description", "")),
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
