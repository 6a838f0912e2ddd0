"""What a request said, so that a quote cannot be verified against it.

A page may repeat the address it was asked for (a search page's "results for ...", a 404's
"no page at ..."): text the person citing it chose. These helpers name every part of a request,
decoded every way a page may show it, and cut the echoes of them out of a page's text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import parse_qsl, unquote, unquote_plus, urlsplit

_UNIFORM = str.maketrans(
    {
        **dict.fromkeys("‘’‚‛′", "'"),
        **dict.fromkeys("“”„‟″", '"'),
        **dict.fromkeys("‐‑‒–—―", "-"),
        "…": "...",
    }
)

ECHO_CHARS = 6
"""Parts of a request this long or longer are taken out of the page's text where it echoes
them (a shorter part, a word like ``en``, would take real text out too)."""


def normalise(text: str) -> str:
    """``text`` with runs of whitespace (no-break spaces too) as one space, and typographic
    quotes, dashes and the ellipsis character plain."""
    return " ".join(text.translate(_UNIFORM).split())


def request_parts(addresses: Sequence[str]) -> set[str]:
    """What the request said, decoded every way a page may repeat it: each address, its path and
    each path segment (``-`` and ``_`` read as spaces too), its query string, each name and
    value in it, its fragment."""
    parts: set[str] = set()
    for address in addresses:
        split = urlsplit(address)
        raw = [address, split.path, split.query, split.fragment, *split.path.split("/")]
        raw += [piece for pair in parse_qsl(split.query, keep_blank_values=True) for piece in pair]
        for piece in raw:
            for decoded in (piece, unquote(piece), unquote_plus(piece)):
                parts |= {decoded, re.sub(r"[-_+]+", " ", decoded)}
    return {normalise(part).casefold() for part in parts if part.strip()}


def in_request(quote: str, addresses: Sequence[str]) -> bool:
    """Whether ``quote`` (normalised) is part of what the request said, case aside."""
    wanted = quote.casefold()
    return any(wanted in part for part in request_parts(addresses))


def echoes(addresses: Sequence[str]) -> tuple[re.Pattern[str], ...]:
    """Patterns of the request's parts a page may echo, longest first."""
    parts = sorted((p for p in request_parts(addresses) if len(p) >= ECHO_CHARS), key=len)
    return tuple(re.compile(re.escape(part), re.IGNORECASE) for part in reversed(parts))


_CUT = " \N{SYMBOL FOR NULL} "  # stands where an echo was: no quote holds it


def unechoed(text: str, echoes: tuple[re.Pattern[str], ...]) -> str:
    """``text`` with every echo of the request cut out (a quote cannot span the cut)."""
    for echo in echoes:
        text = echo.sub(_CUT, text)
    return text
