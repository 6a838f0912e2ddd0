"""Money as integer cents: parsing, formatting, percentages and fair splits."""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal

_AMOUNT = re.compile(r"^(-)?(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d{1,2}))?$")


def parse_amount(text: str) -> int:
    """``"1,234.5"`` -> ``123450`` cents. Thousands separators must be in the right places."""
    match = _AMOUNT.match(text.strip())
    if match is None:
        raise ValueError(f"not an amount: {text!r}")
    sign, whole, fraction = match.groups()
    cents = int(whole.replace(",", "")) * 100 + int((fraction or "0").ljust(2, "0"))
    return -cents if sign else cents


def format_amount(cents: int, currency: str = "EUR") -> str:
    """``123450`` -> ``"EUR 1,234.50"``; negative amounts lead with a minus sign."""
    sign = "-" if cents < 0 else ""
    whole, rest = divmod(abs(cents), 100)
    return f"{sign}{currency} {whole:,}.{rest:02d}"


def percent_of(cents: int, percent: Decimal | int | str) -> int:
    """``percent`` % of ``cents``, rounded half away from zero to the nearest cent."""
    exact = Decimal(cents) * Decimal(percent) / 100
    return int(exact.quantize(Decimal(1), rounding=ROUND_HALF_UP))


def allocate(cents: int, parts: int) -> list[int]:
    """Split ``cents`` into ``parts`` shares that differ by at most a cent and add up exactly."""
    if parts < 1:
        raise ValueError(f"parts must be at least 1, got {parts}")
    share, remainder = divmod(cents, parts)
    return [share + 1 if index < remainder else share for index in range(parts)]
