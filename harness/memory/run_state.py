"""Where a run's work lives, kept in progress.md's ``## Run`` section so a new session finds it.

    ## Run

    Branch: harness/fix-dates.5e6f7a8b.1a2b3c4d
    Worktree: /home/me/.harness-worktrees/repo/fix-dates.5e6f7a8b.1a2b3c4d
    Base: 4f0c...
    Head: 9b1e...
    Pinned: 3c9a... /home/me/repo/loop.toml
    Restored: 1

``Head`` is the commit of the last completed round: a resumed run resets the worktree to it, so a
round that was cut off is discarded and redone, and a completed round is never lost.
``Restored`` names the round ``harness restore`` put on the branch since (``Head`` is then that
commit); the next round played drops it. Each
``Pinned`` line is the digest of a file the run's configuration or code came from when it began
(loop.toml, SKILL.md, python gate modules, hook programs): a resumed run must find them unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.memory.progress import Progress
from harness.memory.progress_terms import RESTORED_LABEL, RUN_HEADING, restored_round
from harness.memory.sections import heading_key
from harness.memory.text_fields import Section

_FIELDS = {"branch": "Branch", "worktree": "Worktree", "base": "Base", "head": "Head"}
_FIELD_OF = {heading_key(label): name for name, label in _FIELDS.items()}
_PINNED = "Pinned"


@dataclass(frozen=True)
class RunState:
    """The run's branch, worktree, base commit and last completed round's commit."""

    branch: str | None = None
    worktree: str | None = None
    base: str | None = None
    head: str | None = None
    pins: tuple[tuple[str, str], ...] = ()  # (path, sha256) of the files pinned at the start
    restored: int | None = None  # the round `harness restore` put on the branch, if any since

    @classmethod
    def read(cls, progress: Progress) -> RunState:
        """The state in ``progress``'s Run section; all ``None`` when it has none."""
        section = next((s for s in progress.extra if _is_run(s)), None)
        if section is None:
            return cls()
        values: dict[str, str] = {}
        pins: list[tuple[str, str]] = []
        restored = None
        for line in section.body.splitlines():
            label, _, value = line.partition(":")
            if heading_key(label) == heading_key(_PINNED):
                sha, _, path = value.strip().partition(" ")
                if sha and path:
                    pins.append((path, sha))
                continue
            if (number := restored_round(line)) is not None:
                restored = number
                continue
            name = _FIELD_OF.get(heading_key(label))
            if name and value.strip():
                values[name] = value.strip()
        return cls(**values, pins=tuple(pins), restored=restored)

    def write(self, progress: Progress) -> None:
        """Replace ``progress``'s Run section with this state (none when every field is unset)."""
        lines = [
            f"{label}: {getattr(self, name)}"
            for name, label in _FIELDS.items()
            if getattr(self, name)
        ]
        lines += [f"{_PINNED}: {sha} {path}" for path, sha in self.pins]
        lines += [f"{RESTORED_LABEL}: {self.restored}"] if self.restored is not None else []
        section = Section(heading=RUN_HEADING, body="\n".join(lines))
        others = [s for s in progress.extra if not _is_run(s)]
        progress.extra = [*others, section] if lines else others


def _is_run(section: Section) -> bool:
    """Whether ``section`` is the ``## Run`` section, however a person spelled the heading."""
    return heading_key(section.heading) == heading_key(RUN_HEADING)


def without_run_state(progress: Progress) -> Progress:
    """A copy of ``progress`` without its Run section: the harness's own record of where the
    run's work lives, which a session neither needs (it already works there) nor can use."""
    return progress.model_copy(update={"extra": [s for s in progress.extra if not _is_run(s)]})
