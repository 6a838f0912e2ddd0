"""Where a run's work lives, kept in progress.md's ``## Run`` section so a new session finds it.

    ## Run

    Branch: harness/fix-dates-1a2b3c4d
    Worktree: /home/me/.harness-worktrees/repo/fix-dates-1a2b3c4d
    Base: 4f0c...
    Head: 9b1e...

``Head`` is the commit of the last completed round: a resumed run resets the worktree to it, so a
round that was cut off is discarded and redone, and a completed round is never lost.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.memory import Section
from harness.progress import Progress

HEADING = "Run"
_FIELDS = {"branch": "Branch", "worktree": "Worktree", "base": "Base", "head": "Head"}


@dataclass(frozen=True)
class RunState:
    branch: str | None = None
    worktree: str | None = None
    base: str | None = None
    head: str | None = None

    @classmethod
    def read(cls, progress: Progress) -> RunState:
        section = next((s for s in progress.extra if s.heading.lower() == HEADING.lower()), None)
        if section is None:
            return cls()
        labels = {label.lower(): name for name, label in _FIELDS.items()}
        values: dict[str, str] = {}
        for line in section.body.splitlines():
            label, _, value = line.partition(":")
            name = labels.get(label.strip().lower())
            if name and value.strip():
                values[name] = value.strip()
        return cls(**values)

    def write(self, progress: Progress) -> None:
        lines = [
            f"{label}: {getattr(self, name)}"
            for name, label in _FIELDS.items()
            if getattr(self, name)
        ]
        section = Section(heading=HEADING, body="\n".join(lines))
        others = [s for s in progress.extra if s.heading.lower() != HEADING.lower()]
        progress.extra = [*others, section] if lines else others
