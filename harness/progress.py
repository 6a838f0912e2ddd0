"""progress.md: the state of one goal that outlives a session, as Markdown a person can edit.

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
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from enum import StrEnum
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness.atomic import atomic_write_text
from harness.errors import ConfigError, ToolError
from harness.memory import (
    Line,
    OneLine,
    Paragraph,
    Section,
    Verbatim,
    block_text,
    hanging,
    heading_key,
    located,
    normalise_newlines,
    numbered,
    one_line,
    read_markdown,
    split_sections,
    validation_message,
)

_GATE = re.compile(r"^(?P<name>.+?)\s+[—–-]+\s+(?P<state>passed|failed)(?:\s+\((?P<detail>.*)\))?$")


class Status(StrEnum):
    """Where a goal stands."""

    NOT_STARTED = "not started"
    IN_PROGRESS = "in progress"
    PASSED = "passed"
    ESCALATED = "escalated"


class ChecklistItem(BaseModel):
    """One ``- [ ]`` / ``- [x]`` line."""

    model_config = ConfigDict(frozen=True)

    text: OneLine = Field(min_length=1)
    done: bool = False

    def render(self) -> str:
        return f"- [{'x' if self.done else ' '}] {self.text}"


class GateSummary(BaseModel):
    """A gate's result in an attempt: ``pytest — failed (tests/test_x.py::test_a)``."""

    model_config = ConfigDict(frozen=True)

    name: OneLine = Field(min_length=1)
    passed: bool
    detail: OneLine = ""

    @classmethod
    def parse(cls, text: str) -> GateSummary | None:
        """The summary a gate line describes, or ``None`` for free text."""
        match = _GATE.match(one_line(text))
        if not match:
            return None
        state = match.group("state")
        return cls(name=match["name"], passed=state == "passed", detail=match["detail"] or "")

    def render(self) -> str:
        state = "passed" if self.passed else "failed"
        return f"{self.name} — {state}" + (f" ({self.detail})" if self.detail else "")


class Attempt(BaseModel):
    """What one round tried and how it ended."""

    model_config = ConfigDict(frozen=True)

    round: int = Field(ge=1)
    outcome: OneLine = ""
    gates: tuple[GateSummary | str, ...] = ()
    critic_score: float | None = Field(default=None, ge=0, le=10, allow_inf_nan=False)
    tokens: int = Field(default=0, ge=0)
    cost_usd: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    commit: OneLine = ""
    summary: Paragraph = ""
    extra: tuple[str, ...] = ()

    @field_validator("critic_score")
    @classmethod
    def _hundredths(cls, value: float | None) -> float | None:
        return None if value is None else round(value, 2)

    @field_validator("cost_usd")
    @classmethod
    def _micro_dollars(cls, value: float) -> float:
        return round(value, 6)

    @field_validator("gates", mode="before")
    @classmethod
    def _gates(cls, value: object) -> object:
        return tuple(_gate(g) for g in value) if isinstance(value, list | tuple) else value

    @field_validator("extra")
    @classmethod
    def _extra(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(line.rstrip() for line in value if line.strip())

    def render(self) -> str:
        heading = f"### Round {self.round}" + (f" — {self.outcome}" if self.outcome else "")
        bullets = [f"- Gate: {g.render() if isinstance(g, GateSummary) else g}" for g in self.gates]
        if self.critic_score is not None:
            bullets.append(f"- Critic: {self.critic_score!r}/10")
        bullets.append(f"- Tokens: {self.tokens} · cost ${_dollars(self.cost_usd)}")
        if self.commit:
            bullets.append(f"- Commit: {self.commit}")
        bullets += self.extra  # before the summary, whose indented lines run on
        if self.summary:
            bullets.append(hanging("- Summary: ", self.summary))
        return heading + "\n\n" + "\n".join(bullets)


def _gate(gate: object) -> object:
    """Free text that reads as a gate summary becomes one, so a save and load agree."""
    if isinstance(gate, str):
        text = one_line(gate)
        if not text:
            raise ValueError("a gate line needs text")
        return GateSummary.parse(text) or text
    return gate


def _dollars(cost: float) -> str:
    return f"{cost:.6f}".rstrip("0").rstrip(".")


class Progress(BaseModel):
    """The progress.md of one goal. :meth:`load`, change, :meth:`save`."""

    model_config = ConfigDict(validate_assignment=True)

    name: OneLine = ""
    goal: OneLine = ""
    status: Status = Status.NOT_STARTED
    iteration: int = Field(default=0, ge=0)
    max_iterations: int | None = Field(default=None, ge=1)
    resume_point: Paragraph = ""
    checklist: list[ChecklistItem] = Field(default_factory=list)
    attempts: list[Attempt] = Field(default_factory=list)
    notes: Verbatim = ""
    extra: list[Section] = Field(default_factory=list)
    path: Path | None = None

    @property
    def next_round(self) -> int:
        """The number the next recorded attempt will get."""
        return self.iteration + 1

    @property
    def rounds_left(self) -> int | None:
        """Rounds before the cap, or ``None`` when there is no cap."""
        return None if self.max_iterations is None else max(0, self.max_iterations - self.iteration)

    @property
    def open_items(self) -> list[ChecklistItem]:
        """Checklist items not ticked yet."""
        return [item for item in self.checklist if not item.done]

    # --- changes (plain functions the agent's tools wrap) -------------------------------

    def record_attempt(
        self,
        outcome: str,
        *,
        gates: Iterable[GateSummary | str] = (),
        critic_score: float | None = None,
        tokens: int = 0,
        cost_usd: float = 0.0,
        commit: str = "",
        summary: str = "",
    ) -> Attempt:
        """Log round :attr:`next_round` and advance :attr:`iteration` to it."""
        attempt = Attempt(
            round=self.next_round,
            outcome=outcome,
            gates=tuple(gates),
            critic_score=critic_score,
            tokens=tokens,
            cost_usd=cost_usd,
            commit=commit,
            summary=summary,
        )
        self.attempts.append(attempt)
        self.iteration = attempt.round
        if self.status is Status.NOT_STARTED:
            self.status = Status.IN_PROGRESS
        return attempt

    def add_item(self, text: str, *, done: bool = False) -> ChecklistItem:
        """Add a checklist item; an item with the same text is returned instead of doubled."""
        item = ChecklistItem(text=text, done=done)
        for existing in self.checklist:
            if existing.text.casefold() == item.text.casefold():
                return existing
        self.checklist.append(item)
        return item

    def mark_done(self, item: int | str, *, done: bool = True) -> ChecklistItem:
        """Tick (or untick) an item, by 0-based index or by its text (a unique part is enough).

        Raises :class:`ToolError` listing the checklist when nothing, or more than one, matches.
        """
        index = self._find(item)
        self.checklist[index] = self.checklist[index].model_copy(update={"done": done})
        return self.checklist[index]

    def set_resume_point(self, text: str) -> None:
        """Where the next session should pick up (one paragraph)."""
        self.resume_point = text

    def add_note(self, text: str) -> None:
        """Append a paragraph to the Notes section."""
        self.notes = f"{self.notes}\n\n{text}" if self.notes else text

    def _find(self, item: int | str) -> int:
        if isinstance(item, int):
            if 0 <= item < len(self.checklist):
                return item
            raise ToolError(f"no checklist item {item}; there are {len(self.checklist)}")
        wanted = one_line(item).casefold()
        texts = [entry.text.casefold() for entry in self.checklist]
        exact = [i for i, text in enumerate(texts) if text == wanted]
        partial = [i for i, text in enumerate(texts) if wanted and wanted in text]
        found = exact or partial
        if len(found) == 1:
            return found[0]
        listing = "; ".join(f"{i}: {entry.text}" for i, entry in enumerate(self.checklist))
        problem = "matches several items" if found else "matches no item"
        raise ToolError(f"{item!r} {problem}. Checklist: {listing or '(empty)'}")

    # --- files --------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Progress:
        """Read a progress.md; :class:`ConfigError` names the file and line if it is broken."""
        progress = cls.parse(read_markdown(path, "progress file"), source=path)
        progress.path = Path(path)
        return progress

    @classmethod
    def load_or_create(
        cls,
        path: str | os.PathLike[str],
        *,
        name: str,
        goal: str = "",
        max_iterations: int | None = None,
    ) -> Progress:
        """Load ``path`` if it exists (a broken file still raises), else a fresh, unsaved one."""
        if Path(path).exists():
            return cls.load(path)
        return cls(name=name, goal=goal, max_iterations=max_iterations, path=Path(path))

    @classmethod
    def parse(cls, text: str, *, source: str | os.PathLike[str] = "<progress>") -> Progress:
        """Parse progress.md text; ``source`` names it in errors."""
        return _Reader(source).read(normalise_newlines(text))

    def save(self, path: str | os.PathLike[str] | None = None) -> Path:
        """Write atomically to ``path`` (which becomes :attr:`path`) or to :attr:`path`."""
        if path is not None:
            self.path = Path(path)
        if self.path is None:
            raise ConfigError("progress has no path to save to; pass one to save()")
        return atomic_write_text(self.path, self.render())

    def render(self) -> str:
        """The whole document as the harness writes it."""
        cap = f" of {self.max_iterations}" if self.max_iterations is not None else ""
        header = [
            f"Goal: {self.goal}".rstrip(),
            f"Status: {self.status}",
            f"Round: {self.iteration}{cap}",
            hanging("Resume point: ", self.resume_point),
        ]
        attempts = "\n\n".join(attempt.render() for attempt in self.attempts)
        parts = [
            f"# Progress: {self.name}".rstrip(),
            "\n".join(header),
            _titled("Checklist", "\n".join(item.render() for item in self.checklist)),
            _titled("Attempts", attempts),
            _titled("Notes", self.notes),
            *(section.render() for section in self.extra),
        ]
        return "\n\n".join(parts) + "\n"

    def render_for_agent(self, *, last_attempts: int = 3) -> str:
        """The document as a session starts from it, with only the latest attempts."""
        shown = self.attempts[-last_attempts:] if last_attempts > 0 else []
        return self.model_copy(update={"attempts": shown}).render()


def _titled(heading: str, body: str) -> str:
    return f"## {heading}\n\n{body}" if body else f"## {heading}"


# --- reading -------------------------------------------------------------------------------

_M = TypeVar("_M", bound=BaseModel)
_HEADER_HELP = (
    "before the first section only 'Goal:', 'Status:', 'Round:' and 'Resume point:' lines "
    "belong (free text goes under '## Notes')"
)
_TITLE = re.compile(r"^#(?!#)\s*(?:progress\s*(?::\s*|$))?(.*?)\s*$", re.IGNORECASE)
_HEADER_KEY = re.compile(r"^([A-Za-z][A-Za-z _-]*?)\s*:\s*(.*)$")
_HEADER_KEYS = {"goal": "goal", "status": "status", "round": "round"}
_HEADER_KEYS |= {"resume point": "resume_point", "resume": "resume_point"}
_ROUND = re.compile(r"^(\d+)(?:\s*(?:of|/)\s*(\d+))?$", re.IGNORECASE)
_SECTIONS = {"checklist": "checklist", "tasks": "checklist", "to do": "checklist"}
_SECTIONS |= {"attempts": "attempts", "history": "attempts", "notes": "notes"}
_ITEM = re.compile(r"^\s*[-*+]\s+\[([ xX])\]\s*(.*?)\s*$")
_ATTEMPT_HEAD = re.compile(r"^###(?!#)\s*(.*?)\s*$")
_ROUND_HEAD = re.compile(r"^###\s*round\s+(\d+)\s*(?:[—–-]+\s*(.*?))?\s*$", re.IGNORECASE)
_BULLET_KEY = re.compile(r"^[-*+]\s+([A-Za-z ]+?)\s*:\s*(.*)$")
_ATTEMPT_KEYS = {"gate": "gate", "critic": "critic", "tokens": "tokens", "commit": "commit"}
_ATTEMPT_KEYS |= {"summary": "summary"}
_TOKENS = re.compile(r"^([\d,_]+)(?:\s*[·,;|]?\s*cost\s*:?\s*\$?\s*(\S+))?$", re.IGNORECASE)
_SCORE = re.compile(r"^([0-9.]+)\s*(?:/\s*10)?$")


class _Reader:
    """Turns progress.md text into a :class:`Progress`, or a located :class:`ConfigError`."""

    def __init__(self, source: str | os.PathLike[str]) -> None:
        self.source = source

    def error(self, line: int, message: str) -> ConfigError:
        return located(self.source, line, message)

    def validate(
        self, model: type[_M], data: dict[str, object], line: int, lines: dict[str, int]
    ) -> _M:
        """Build ``model``; a bad field is reported at the line it came from (``lines``)."""
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            field = str(exc.errors()[0]["loc"][0]) if exc.errors()[0]["loc"] else ""
            raise self.error(lines.get(field, line), validation_message(exc)) from exc

    def read(self, text: str) -> Progress:
        head, sections = split_sections(numbered(text))
        data = self.header(head)
        extra: list[Section] = []
        seen: dict[str, int] = {}
        for section in sections:
            name = _SECTIONS.get(section.key)
            if name is None:
                extra.append(Section(heading=section.heading, body=block_text(section.lines)))
            elif name in seen:
                raise self.error(
                    section.line, f"second {name} section (first on line {seen[name]})"
                )
            elif name == "checklist":
                data[name] = [self.item(line) for line in section.lines if line.text.strip()]
            elif name == "attempts":
                data[name] = self.attempts(section.lines)
            else:
                data[name] = block_text(section.lines)
            if name:
                seen.setdefault(name, section.line)
        return self.validate(Progress, {**data, "extra": extra}, 1, {})

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

    def item(self, line: Line) -> ChecklistItem:
        match = _ITEM.match(line.text)
        if not match or not match.group(2):
            raise self.error(
                line.number, f"expected '- [ ] task' or '- [x] task', got {line.text.strip()!r}"
            )
        return ChecklistItem(text=match.group(2), done=match.group(1) != " ")

    def attempts(self, lines: list[Line]) -> list[Attempt]:
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

    def attempt(self, head: Line, body: list[Line]) -> Attempt:
        match = _ROUND_HEAD.match(head.text)
        if not match:
            raise self.error(
                head.number, f"expected '### Round N — outcome', got {head.text.strip()!r}"
            )
        data: dict[str, object] = {"round": match.group(1), "outcome": match.group(2) or ""}
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
        return self.validate(Attempt, data, head.number, lines)

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
