"""Bounded text: one way to cut long output, keeping its head and tail."""

from __future__ import annotations


def truncate(text: str, limit: int, *, head_share: float = 0.5, total: int | None = None) -> str:
    """``text`` cut to at most ``limit`` characters around a marker counting what was cut.

    ``head_share`` is the part of the kept characters taken from the head (0 keeps only the
    tail). ``total`` is the size of the original when ``text`` is already a head-and-tail
    sample of it, so that the marker counts what the original lost.
    """
    if len(text) <= limit:
        return text
    size = max(len(text), total or 0)
    before, after = ("\n" if head_share > 0 else ""), ("\n" if head_share < 1 else "")
    keep = limit
    while True:  # the count's digits change the marker's length: settles in a step or two
        marker = f"{before}[... {size - keep} characters truncated ...]{after}"
        if keep + len(marker) <= limit or keep <= 0:
            break
        keep = limit - len(marker)
    if keep <= 0:  # no room even for the marker
        return text[: max(limit, 0)] if head_share > 0 else text[len(text) - max(limit, 0) :]
    head = round(keep * head_share)
    return text[:head] + marker + text[len(text) - (keep - head) :]
