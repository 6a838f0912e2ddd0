"""Reading progress.md: the text a person may have edited, back into a :class:`Progress`.

The format (every part optional when written by hand; the harness always writes all of it)::

    # Progress: fix-date-parsing

    Goal: make tests/test_dates.py pass
    Status: in progress
    Round: 2 of 10
    Resume point: parse_date still fails on ISO weeks;
      look at the week branch next.

    ## Checklist

    - [x] reproduce the failure
    - [ ] fix parse_date

    ## Attempts

    ### Round 1 — failed

    - Gate: pytest — failed (tests/test_dates.py::test_week)
    - Critic: 5.0/10
    - Tokens: 1234 · cost $0.0012
    - Commit: 3f2a9c1
    - Summary: rewrote the tokenizer

    ## Notes

    Free text, kept verbatim.

``Round`` counts the rounds recorded so far. Sections with other headings are kept verbatim
(after Notes), and so are unrecognised lines inside an attempt. A file that cannot be read
unambiguously raises :class:`ConfigError` naming the file and line; nothing is written then.

:func:`read_progress` reads the text into :class:`ProgressText`: every field as written, with
the line it came from, not yet validated. :class:`~harness.memory.progress.Progress` validates
that; ``harness status`` shows it as it is, without paying for pydantic's import.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from harness.core.errors import ConfigError
from harness.core.text import one_line
from harness.memory.progress_terms import SECTIONS, Status
from harness.memory.sections import (
    Line,
    RawSection,
    block_text,
    document_lines,
    heading_key,
    located,
    split_sections,
)

_HEADER_HELP = (
    "before the first section only 'Goal:', 'Status:', 'Round:' and 'Resume point:' lines "
    "belong (free text goes under '## Notes')"
)
_TITLE = re.compile(r"^#(?!#)\s*(?:progress\s*(?::\s*|$))?(.*?)\s*$", re.IGNORECASE)
_HEADER_KEY = re.compile(r"^([A-Za-z][A-Za-z _-]*?)\s*:\s*(.*)$")
_HEADER_KEYS = {"goal": "goal", "status": "status", "round": "round"}
_HEADER_KEYS |= {"resume point": "resume_point", "resume": "resume_point"}
_ROUND = re.compile(r"^(\d+)(?:\s*(?:of|/)\s*(\d+))?$", re.IGNORECASE)
_ITEM = re.compile(r"^\s*[-*+]\s+\[([ xX])\]\s*(.*?)\s*$")
_ATTEMPT_HEAD = re.compile(r"^###(?!#)\s*(.*?)\s*$")
_ROUND_HEAD = re.compile(r"^###\s*round\s+(\d+)\s*(?:[—–-]+\s*(.*?))?\s*$", re.IGNORECASE)
_BULLET_KEY = re.compile(r"^[-*+]\s+([A-Za-z ]+?)\s*:\s*(.*)$")
_ATTEMPT_KEYS = {"gate": "gate", "critic": "critic", "tokens": "tokens", "commit": "commit"}
_ATTEMPT_KEYS |= {"summary": "summary"}
_TOKENS = re.compile(r"^([\d,_]+)(?:\s*[·,;|]?\s*cost\s*:?\s*\$?\s*(\S+))?$", re.IGNORECASE)
_SCORE = re.compile(r"^([0-9.]+)\s*(?:/\s*10)?$")


@dataclass(frozen=True)
class FieldsAt:
    """Fields as written (not yet validated), the line they start on, and each one's line."""

    fields: dict[str, object]
    line: int
    lines: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ProgressText:
    """A progress.md as written: its header fields and notes (``fields``), the checklist as
    ``(text, done)`` pairs, each attempt's fields, and the sections it does not interpret."""

    fields: dict[str, object]
    checklist: list[tuple[str, bool]]
    attempts: list[FieldsAt]
    extra: list[RawSection]


def read_progress(text: str, *, source: str | os.PathLike[str] = "<progress>") -> ProgressText:
    """Read progress.md text; ``source`` names it in errors."""
    return _Reader(source).read(document_lines(text, source, "progress file"))


class _Reader:
    """Turns progress.md text into a :class:`ProgressText`, or a located :class:`ConfigError`."""

    def __init__(self, source: str | os.PathLike[str]) -> None:
        self.source = source

    def error(self, line: int, message: str) -> ConfigError:
        return located(self.source, line, message)

    def read(self, lines: list[Line]) -> ProgressText:
        head, sections = split_sections(lines)
        data = self.header(head)
        checklist: list[tuple[str, bool]] = []
        attempts: list[FieldsAt] = []
        extra: list[RawSection] = []
        seen: dict[str, int] = {}
        for section in sections:
            name = SECTIONS.get(section.key)
            if name is None:
                extra.append(section)
            elif name in seen:
                raise self.error(
                    section.line, f"second {name} section (first on line {seen[name]})"
                )
            elif name == "checklist":
                checklist = [self.item(line) for line in section.lines if line.text.strip()]
            elif name == "attempts":
                attempts = self.attempts(section.lines)
            else:
                data[name] = block_text(section.lines)
            if name:
                seen.setdefault(name, section.line)
        return ProgressText(data, checklist, attempts, extra)

    def header(self, lines: list[Line]) -> dict[str, object]:
        """Title and ``Key: value`` lines; ``Resume point`` may run on over several lines."""
        data: dict[str, object] = {}
        seen: set[str] = set()
        resume: list[str] = []
        in_resume = False
        for line in lines:
            text = line.text
            if not text.strip():
                in_resume = False
                continue
            title = _TITLE.match(text)
            if title and not seen:
                data["name"] = title.group(1)
                seen.add("title")
                continue
            match = None if text[0].isspace() else _HEADER_KEY.match(text)
            key = _HEADER_KEYS.get(heading_key(match.group(1))) if match else None
            if match is None or key is None:
                if not in_resume:
                    raise self.error(line.number, f"unexpected {text.strip()!r}: {_HEADER_HELP}")
                resume.append(text)
            elif key in seen:
                raise self.error(line.number, f"{match.group(1)!r} is given twice")
            elif key == "resume_point":
                resume.append(match.group(2))
                in_resume = True
            else:
                data.update(self.header_value(key, match.group(2).strip(), line.number))
                in_resume = False
            seen.add(key or "title")
        return {**data, "resume_point": "\n".join(resume)}

    def header_value(self, key: str, value: str, line: int) -> dict[str, object]:
        if key == "status":
            try:
                return {"status": Status(heading_key(value))}
            except ValueError:
                allowed = ", ".join(status.value for status in Status)
                raise self.error(line, f"status {value!r} is not one of: {allowed}") from None
        if key == "round":
            match = _ROUND.match(value)
            cap = int(match.group(2)) if match and match.group(2) else None
            if not match or cap == 0:
                raise self.error(line, f"round must read 'N' or 'N of M' (M >= 1), got {value!r}")
            return {"iteration": int(match.group(1)), "max_iterations": cap}
        return {key: value}

    def item(self, line: Line) -> tuple[str, bool]:
        match = _ITEM.match(line.text)
        if not match or not match.group(2):
            raise self.error(
                line.number, f"expected '- [ ] task' or '- [x] task', got {line.text.strip()!r}"
            )
        return one_line(match.group(2)), match.group(1) != " "

    def attempts(self, lines: list[Line]) -> list[FieldsAt]:
        groups: list[tuple[Line, list[Line]]] = []
        for line in lines:
            if _ATTEMPT_HEAD.match(line.text):
                groups.append((line, []))
            elif groups:
                groups[-1][1].append(line)
            elif line.text.strip():
                raise self.error(
                    line.number, f"expected '### Round N — outcome', got {line.text.strip()!r}"
                )
        return [self.attempt(head, body) for head, body in groups]

    def attempt(self, head: Line, body: list[Line]) -> FieldsAt:
        match = _ROUND_HEAD.match(head.text)
        if not match:
            raise self.error(
                head.number, f"expected '### Round N — outcome', got {head.text.strip()!r}"
            )
        data: dict[str, object] = {
            "round": int(match.group(1)),
            "outcome": one_line(match.group(2) or ""),
        }
        gates: list[str] = []
        extra: list[str] = []
        summary: list[str] = []
        seen: set[str] = set()
        lines: dict[str, int] = {}
        in_summary = False
        for line in body:
            if not line.text.strip():
                in_summary = False
                continue
            if in_summary and line.text[0].isspace():
                summary.append(line.text)
                continue
            bullet = _BULLET_KEY.match(line.text)
            key = _ATTEMPT_KEYS.get(heading_key(bullet.group(1))) if bullet else None
            in_summary = key == "summary"
            if bullet is None or key is None:
                extra.append(line.text)
            elif key == "gate":
                gates.append(bullet.group(2))
                lines.setdefault("gates", line.number)
            elif key in seen:
                raise self.error(line.number, f"a second {bullet.group(1)!r} line in this round")
            elif key == "summary":
                summary.append(bullet.group(2))
            else:
                values = self.attempt_value(key, bullet.group(2).strip(), line.number)
                data |= values
                lines |= dict.fromkeys(values, line.number)
            if key:
                seen.add(key)
        data |= {"gates": gates, "extra": extra, "summary": "\n".join(summary)}
        return FieldsAt(data, head.number, lines)

    def attempt_value(self, key: str, value: str, line: int) -> dict[str, object]:
        if key == "commit":
            return {"commit": value}
        if key == "critic":
            match = _SCORE.match(value)
            if not match:
                raise self.error(line, f"critic score must read like '7.5/10', got {value!r}")
            return {"critic_score": self.number(match.group(1), line, "critic score")}
        match = _TOKENS.match(value)
        if not match:
            raise self.error(line, f"tokens must read like '1234 · cost $0.01', got {value!r}")
        tokens = int(match.group(1).replace(",", "").replace("_", ""))
        cost = self.number(match.group(2), line, "cost") if match.group(2) else 0.0
        return {"tokens": tokens, "cost_usd": cost}

    def number(self, text: str, line: int, what: str) -> float:
        try:
            return float(text)
        except ValueError:
            raise self.error(line, f"{what} must be a number, got {text!r}") from None
