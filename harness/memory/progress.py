"""progress.md: the state of one goal that outlives a session, as Markdown a person can edit.

:class:`Progress` holds it and writes it; the format, and how a hand-edited file is read back,
is in :mod:`harness.memory.progress_format`. A file that cannot be read unambiguously raises
:class:`ConfigError` naming the file and line; nothing is written then.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness.core.atomic import atomic_write_text
from harness.core.errors import ConfigError, ToolError
from harness.core.text import one_line
from harness.core.validation import validation_message
from harness.memory.progress_format import FieldsAt, read_progress
from harness.memory.progress_items import Attempt, ChecklistItem, GateSummary
from harness.memory.progress_terms import SECTIONS, Status
from harness.memory.sections import hanging, heading_key, located, read_markdown
from harness.memory.text_fields import OneLine, Paragraph, Section, SectionBody


class Progress(BaseModel):
    """The progress.md of one goal. :meth:`load`, change, :meth:`save`.

    What is saved loads back equal, so a value that would not is refused when it is set: notes
    (or a kept section's body) with a ``## `` line, or a kept section in :attr:`extra` headed
    like one progress.md interprets (``Notes``, ``Checklist`` ...).
    """

    model_config = ConfigDict(validate_assignment=True)

    name: OneLine = ""
    goal: OneLine = ""
    status: Status = Status.NOT_STARTED
    iteration: int = Field(default=0, ge=0)
    max_iterations: int | None = Field(default=None, ge=1)
    resume_point: Paragraph = ""
    checklist: list[ChecklistItem] = Field(default_factory=list)
    attempts: list[Attempt] = Field(default_factory=list)
    notes: SectionBody = ""
    extra: list[Section] = Field(default_factory=list)
    path: Path | None = None

    @field_validator("extra")
    @classmethod
    def _uninterpreted(cls, sections: list[Section]) -> list[Section]:
        for section in sections:
            if name := SECTIONS.get(heading_key(section.heading)):
                raise ValueError(
                    f"a section headed {section.heading!r} would be read back as progress.md's "
                    f"{name}; "
                    f"give it another heading, or use Progress.{name}"
                )
        return sections

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
        listing = "; ".join(f"{i}. {entry.text}" for i, entry in enumerate(self.checklist, 1))
        problem = "matches several items" if found else "matches no item"
        raise ToolError(f"{item!r} {problem}. Checklist: {listing or '(empty)'}")

    # --- files --------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Progress:
        """Read a progress.md; :class:`ConfigError` names the file and line if it is broken."""
        progress = cls.parse(read_markdown(path, "progress file", own=True), source=path)
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
        if os.path.lexists(path):  # a link there is refused by load, not taken for no file
            return cls.load(path)
        return cls(name=name, goal=goal, max_iterations=max_iterations, path=Path(path))

    @classmethod
    def parse(cls, text: str, *, source: str | os.PathLike[str] = "<progress>") -> Progress:
        """Parse progress.md text; ``source`` names it in errors, and a bad value its line."""
        found = read_progress(text, source=source)
        attempts = [_validated(Attempt, attempt, source) for attempt in found.attempts]
        data = {
            **found.fields,
            "checklist": [ChecklistItem(text=text, done=done) for text, done in found.checklist],
            "attempts": attempts,
            "extra": [Section.kept(section) for section in found.extra],
        }
        return _validated(cls, FieldsAt(data, 1), source)

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
        parts = [
            f"# Progress: {self.name}".rstrip(),
            "\n".join(header),
            *(section.render() for section in self._sections(self.attempts)),
        ]
        return "\n\n".join(parts) + "\n"

    def render_for_agent(self, *, last_attempts: int = 3) -> str:
        """What a session resumes from, as it reads in the round's task: the status, the resume
        point, the checklist, the latest attempts, the notes and kept sections.

        The goal and the round are left out (the task states both above it), and so is every
        empty part: a session is charged for each token of its first request.
        """
        shown = self.attempts[-last_attempts:] if last_attempts > 0 else []
        header = [f"Status: {self.status}"]
        if self.resume_point:
            header.append(hanging("Resume point: ", self.resume_point))
        parts = ["\n".join(header), *(s.render() for s in self._sections(shown) if s.body)]
        return "\n\n".join(parts) + "\n"

    def _sections(self, attempts: list[Attempt]) -> list[Section]:
        """The sections below the header, with ``attempts`` as the Attempts section."""
        return [
            Section(heading="Checklist", body="\n".join(i.render() for i in self.checklist)),
            Section(heading="Attempts", body="\n\n".join(a.render() for a in attempts)),
            Section(heading="Notes", body=self.notes),
            *self.extra,
        ]


_M = TypeVar("_M", bound=BaseModel)


def _validated(model: type[_M], found: FieldsAt, source: str | os.PathLike[str]) -> _M:
    """``model`` built from ``found``; a bad field is reported at the line it came from."""
    try:
        return model.model_validate(found.fields)
    except ValidationError as exc:
        loc = exc.errors()[0]["loc"]
        line = found.lines.get(str(loc[0]) if loc else "", found.line)
        raise located(source, line, validation_message(exc)) from exc
