"""Markdown structure shared by the text checkers: headings outside code, section bodies, input.

A line inside a fenced code block (```` ``` ```` or ``~~~``) is code, never a heading, so a
``# comment`` in a shell example neither starts nor ends a section.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from harness.core.errors import ConfigError

EXIT_PASSED, EXIT_FAILED, EXIT_UNREADABLE = 0, 1, 2
"""Exit codes of the checkers' command lines: the check passed, it failed, an input is unreadable."""

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


class Heading(NamedTuple):
    """An ATX heading: the 1-based ``line`` it is on, its ``level`` (1-6) and its ``title``."""

    line: int
    level: int
    title: str


def parse_heading(line: str, number: int = 0) -> Heading | None:
    """``line`` as a heading on line ``number``, or None when it is not one."""
    match = _HEADING.match(line)
    return Heading(number, len(match.group(1)), match.group(2)) if match else None


def prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """Numbered lines (1-based) outside fenced code blocks; fence lines themselves are left out."""
    return ((number, line) for number, line, in_code in _classified_lines(text) if not in_code)


def headings(text: str) -> Iterator[Heading]:
    """Every heading outside fenced code blocks, in order."""
    found = (parse_heading(line, number) for number, line in prose_lines(text))
    return (heading for heading in found if heading)


def section_body(text: str, heading: Heading) -> str:
    """What follows ``heading`` up to the next heading of its level or above, stripped.

    Fenced code in the section is part of its body; a heading inside it does not end it.
    """
    body: list[str] = []
    for number, line, in_code in itertools.islice(_classified_lines(text), heading.line, None):
        following = None if in_code else parse_heading(line, number)
        if following and following.level <= heading.level:
            break
        body.append(line)
    return "\n".join(body).strip()


def section(text: str, title: str) -> str | None:
    """The body of the first heading called ``title`` (any level, case ignored), or None."""
    wanted = title.casefold()
    found = next((h for h in headings(text) if h.title.casefold() == wanted), None)
    return None if found is None else section_body(text, found)


def read_text(path: Path) -> str:
    """The UTF-8 text of ``path``; a ConfigError ``cannot read PATH: reason`` if it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(f"cannot read {path}: {reason}") from exc


def _classified_lines(text: str) -> Iterator[tuple[int, str, bool]]:
    """Numbered lines with whether each is code (inside a fence, or a fence line itself)."""
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        marker = _FENCE.match(line)
        if marker and (fence is None or marker.group(1) == fence):
            fence = None if fence else marker.group(1)
            yield number, line, True
            continue
        yield number, line, fence is not None
