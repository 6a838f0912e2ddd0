"""Markdown plumbing shared by SKILL.md and progress.md: reading, sections, located errors.

The documents themselves live in :mod:`harness.memory.skill` and :mod:`harness.memory.progress`;
the pydantic field types their models use, in :mod:`harness.memory.text_fields`. This module
imports no pydantic: ``harness status`` reads progress.md through it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from harness.core import nofollow
from harness.core.errors import ConfigError

# A closing run of '#' needs a space before it, so "## C#" is the heading "C#".
_H2 = re.compile(r"^##(?!#)\s*(.*?)(?:\s+#+)?\s*$")
_BULLET = re.compile(r"^ {0,1}(?:[-*+]|\d+[.)])\s+(.*)$")


@dataclass(frozen=True)
class Line:
    """One line of a document with its 1-based number, for errors a person can find."""

    number: int
    text: str


@dataclass(frozen=True)
class RawSection:
    """A ``## heading`` and the lines under it, before interpretation."""

    heading: str
    line: int
    lines: list[Line] = field(default_factory=list)

    @property
    def key(self) -> str:
        """The heading folded for synonym lookup."""
        return heading_key(self.heading)


def located(source: object, line: int | None, message: str) -> ConfigError:
    """A :class:`ConfigError` that names the file and, when known, the line."""
    where = f"{source}:{line}" if line is not None else f"{source}"
    return ConfigError(f"{where}: {message}")


def read_markdown(path: str | os.PathLike[str], what: str, *, own: bool = False) -> str:
    """The text of ``path``; :class:`ConfigError` naming the file if it cannot be read.

    ``own``: a file the harness writes itself (progress.md), read without following a link and
    bounded in size (:mod:`harness.core.nofollow`).
    """
    file = Path(path)
    try:
        return nofollow.read_text(file) if own else file.read_text(encoding="utf-8")
    except OSError as exc:  # the file is named once, not again by the error's own text
        raise located(file, None, f"cannot read {what}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise located(file, None, f"cannot read {what}: {exc}") from exc


def document_lines(text: str, source: object, what: str) -> list[Line]:
    """The numbered lines of a document, newlines normalised; :class:`ConfigError` if blank."""
    text = normalise_newlines(text)
    if not text.strip():
        raise located(source, None, f"{what} is empty")
    return numbered(text)


def normalise_newlines(text: str) -> str:
    """``\\r\\n`` and ``\\r`` become ``\\n``; a leading byte-order mark is dropped."""
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def numbered(text: str, first: int = 1) -> list[Line]:
    """The lines of ``text`` with their numbers."""
    return [Line(first + i, t) for i, t in enumerate(text.split("\n"))]


def split_sections(lines: list[Line]) -> tuple[list[Line], list[RawSection]]:
    """Lines before the first ``## `` heading, and one :class:`RawSection` per heading."""
    head: list[Line] = []
    sections: list[RawSection] = []
    for line in lines:
        heading = heading_of(line.text)
        if heading is not None:
            sections.append(RawSection(heading, line.number))
        elif sections:
            sections[-1].lines.append(line)
        else:
            head.append(line)
    return head, sections


def heading_of(line: str) -> str | None:
    """The heading of a ``## heading`` line, or ``None`` for any other line."""
    match = _H2.match(line)
    return match.group(1) if match else None


def heading_key(heading: str) -> str:
    """Fold a heading or key for synonym lookup: case, ``_``/``-``, apostrophes, colons."""
    folded = heading.casefold().replace("\u2019", "'").replace("_", " ").replace("-", " ")
    return " ".join(folded.strip().rstrip(":").split())


def paragraph(text: str) -> str:
    """One paragraph: each line stripped, blank lines dropped, lines kept."""
    return "\n".join(s for line in text.split("\n") if (s := line.strip()))


def verbatim(text: str) -> str:
    """Text kept as written, minus blank lines at either end."""
    lines = normalise_newlines(text).split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)


def block_text(lines: list[Line]) -> str:
    """The verbatim text of some document lines."""
    return verbatim("\n".join(line.text for line in lines))


def bullet_items(lines: list[Line]) -> list[str]:
    """List items: each bullet (``-``, ``*``, ``+``, ``1.``) with its continuation lines.

    A paragraph without a bullet counts as one item, so prose works too.
    """
    items: list[list[str]] = []
    open_item = False
    for line in lines:
        if not line.text.strip():
            open_item = False
            continue
        match = _BULLET.match(line.text)
        if match:
            items.append([match.group(1).strip()])
            open_item = True
        elif open_item:
            items[-1].append(line.text.strip())
        else:
            items.append([line.text.strip()])
            open_item = True
    return [paragraph("\n".join(item)) for item in items if paragraph("\n".join(item))]


def hanging(first_prefix: str, text: str, indent: str = "  ") -> str:
    """``text`` after ``first_prefix``, its further lines indented so they stay in place."""
    head, *rest = text.split("\n") if text else [""]
    return "\n".join([f"{first_prefix}{head}".rstrip(), *(indent + r for r in rest)])
