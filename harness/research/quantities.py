"""The figures a quote states, each with the quantity it counts, and where two quotes differ.

A figure is a number (``120,000``, ``120000``, ``120k``, ``1.2 million``, ``$4.5``) and the
quantity it belongs to: the word right after it (``rides``, ``stations``) in the singular and
lower case, a unit spelled one way (``m``, ``metre`` and ``meters`` are all ``metre``; ``%`` and
``per cent`` are ``percent``), or the currency sign before it. A number with no such word after
it (a year at the end of a phrase: "opened in 1887") counts nothing named.

Two quotes differ when they name one quantity and share none of its values ("120,000 rides"
against "130,000 rides", however many other figures agree), or when both hold figures of no
named quantity and share none of those ("opened in 1887" against "opened in 1888"). Figures of
different quantities ("120,000 rides" against "40 stations") are never compared, and one
number spelled two ways (``120,000``, ``120000``, ``120k``) is one value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

_FIGURE = re.compile(
    r"(?P<currency>[$€£¥])?(?<![\w.,])(?P<number>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?P<k>[kK]\b)?"
    r"(?:\s*(?P<scale>thousand|million|billion|bn)\b)?"
    r"(?P<after>(?:\s*-?\s*)(?:%|per\s+cent\b|[^\W\d_]+(?:-[^\W\d_]+)*))?",
    re.IGNORECASE,
)
_SCALES = {"k": 10**3, "thousand": 10**3, "million": 10**6, "billion": 10**9, "bn": 10**9}
_SPELLINGS = {
    "percent": ("%", "per cent", "pct"),
    "metre": ("m", "meter"),
    "kilometre": ("km", "kilometer"),
    "centimetre": ("cm", "centimeter"),
    "millimetre": ("mm", "millimeter"),
    "foot": ("ft", "feet"),
    "mile": ("mi",),
    "kilogram": ("kg", "kilo"),
    "gram": ("g",),
    "tonne": ("t", "ton"),
    "pound": ("lb",),
    "second": ("s", "sec"),
    "minute": ("min",),
    "hour": ("h", "hr"),
    "year": ("yr",),
    "person": ("people",),
    "child": ("children",),
    "man": ("men",),
    "woman": ("women",),
}
_UNITS = {spelling: unit for unit, spellings in _SPELLINGS.items() for spelling in spellings}
# fmt: off
_NOT_QUANTITIES = frozenset({
    "a", "about", "above", "across", "after", "against", "ago", "all", "also", "an", "and", "are",
    "around", "as", "at", "before", "below", "between", "but", "by", "during", "each", "for",
    "from", "had", "has", "have", "in", "into", "is", "it", "its", "more", "nearly", "of", "on",
    "or", "out", "over", "per", "since", "than", "that", "the", "then", "these", "this", "those",
    "through", "to", "under", "until", "up", "was", "were", "when", "where", "which", "while",
    "who", "whom", "with", "st", "nd", "rd", "th",
})
# fmt: on
"""Words after a number that do not say what it counts ("in 1887 the light", "40 of them",
the ending of "19th")."""


@dataclass(frozen=True)
class Figure:
    """A figure as a quote states it (``text``: ``120,000 rides``), its number's ``value``, and
    the ``quantity`` it counts (``ride``; None when no word names one)."""

    text: str
    value: Decimal
    quantity: str | None


@dataclass(frozen=True)
class Difference:
    """One quantity two quotes state differently: the figures each gives for it."""

    quantity: str | None
    first: tuple[str, ...]
    second: tuple[str, ...]

    def describe(self) -> str:
        """``120,000 rides against 130,000 rides``."""
        return f"{' and '.join(self.first)} against {' and '.join(self.second)}"


def figures(quote: str) -> tuple[Figure, ...]:
    """The figures of ``quote`` in the order it states them."""
    found = []
    for match in _FIGURE.finditer(quote):
        value = Decimal(match["number"].replace(",", ""))
        scale = (match["k"] or match["scale"] or "").lower()
        value *= _SCALES.get(scale, 1)
        quantity = _quantity(match)
        worded = quantity is not None and not match["currency"]  # the word after names it
        end = match.end() if worded else max(match.end(n) for n in ("number", "k", "scale"))
        found.append(Figure(quote[match.start() : end], value, quantity))
    return tuple(found)


def differences(first: str, second: str) -> tuple[Difference, ...]:
    """Each quantity that both quotes state and on which they share no value (see the module's
    account), in the order ``first`` states them."""
    ours, theirs = figures(first), figures(second)
    found = []
    for quantity in dict.fromkeys(f.quantity for f in ours):
        mine = [f for f in ours if f.quantity == quantity]
        other = [f for f in theirs if f.quantity == quantity]
        if other and not {f.value for f in mine} & {f.value for f in other}:
            found.append(Difference(quantity, _texts(mine), _texts(other)))
    return tuple(found)


def _quantity(match: re.Match[str]) -> str | None:
    """What the figure of ``match`` counts: its currency sign, or the word after it."""
    if match["currency"]:
        return match["currency"]
    after = re.sub(r"\s+", " ", (match["after"] or "").strip(" -").lower())
    if not after or after in _NOT_QUANTITIES:
        return None
    return _UNITS.get(after) or _UNITS.get(_singular(after)) or _singular(after)


def _singular(word: str) -> str:
    """``stations`` -> ``station``, ``cities`` -> ``city``; short words and ``-ss`` kept."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _texts(found: list[Figure]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(f.text for f in found))
