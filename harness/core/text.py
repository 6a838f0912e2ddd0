"""Text for people: one way to cut long output, keeping its head and tail, and one way to make
text from an agent inert on a terminal (and a stream that writes all it is given so); JSON
written compactly; and a value written as TOML, for the loop.toml and config files the harness
writes."""

from __future__ import annotations

import json
import re
from typing import Any, TextIO

_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, clearing the screen
    r"|\x1b[\]PX^_][^\x07\x1b\n]*(?:\x07|\x1b\\)?"  # OSC (a clipboard write), DCS, ...: to their end
    r"|\x1b[ -/]*[0-~]"  # the two-character escapes
)
# C0 but tab and newline, DEL, C1, and the bidirectional overrides and isolates (which show a
# line's characters in another order than they run)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_LINE_BREAKS = re.compile(r"[\t\n]")


def inert(text: str, *, multiline: bool = True) -> str:
    """``text`` with every escape sequence and control character taken out, so that what an
    agent wrote cannot clear the screen, colour a fake result, move the cursor or write the
    clipboard when shown. Tabs and newlines stay when ``multiline``, else become spaces."""
    text = _CONTROLS.sub("", _ESCAPES.sub("", text))
    return text if multiline else _LINE_BREAKS.sub(" ", text)


def one_line(text: str) -> str:
    """Whitespace, newlines included, collapsed to single spaces."""
    return " ".join(text.split())


def shown_name(name: str) -> str:
    """A file's name as a person reads it among other text: as it is, or quoted with every
    character past plain text escaped when it holds a line break or another control (a line
    of its own would read as the report's)."""
    return name if name.isprintable() else json.dumps(name)


class InertStream:
    """A text stream writing all it is given inert (:func:`inert`) to ``raw``: the command line
    puts its standard output and error behind one, the one door through which text reaches the
    terminal, whatever command wrote it. What the harness draws itself (the live display's
    line, cleared and drawn again) goes to ``raw`` (:func:`raw_stream`), its own text inert."""

    def __init__(self, raw: TextIO) -> None:
        self.raw = raw

    def write(self, text: str) -> int:
        self.raw.write(inert(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding, ...
        return getattr(self.raw, name)


def raw_stream(stream: TextIO) -> TextIO:
    """The stream ``stream`` writes to, past an :class:`InertStream`."""
    return stream.raw if isinstance(stream, InertStream) else stream


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


UNPAIRED = re.compile("[\ud800-\udfff]")
"""A surrogate standing alone (as JSON's ``\\udc00`` decodes): text no file or pipe can hold."""

compact_json = json.JSONEncoder(separators=(",", ":")).encode
"""JSON text without spaces, every non-ASCII and control character escaped, by one encoder made
once (``json.dumps`` with ``separators`` makes an encoder on every call)."""


def toml_value(value: str | bool | int) -> str:
    """``value`` in TOML: a basic string (with every character TOML wants escaped, escaped), an
    integer, or a boolean in TOML's own words."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
