"""What an outer-loop run hands back."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harness.core.stop import StopReason
from harness.core.usage import Usage
from harness.outer.decision import RoundReport


@dataclass
class RunResult:
    """How an outer-loop run ended."""

    stop_reason: StopReason
    message: str
    rounds: list[RoundReport] = field(default_factory=list)  # completed rounds only
    usage: Usage = field(default_factory=Usage)
    branch: str | None = None
    worktree: Path | None = None
    escalation: Path | None = None
    run_id: str = ""
    first_round: int = 1
    warning: str | None = None  # e.g. uncommitted changes the run's worktree did not start from
    cut_short: int | None = None  # the round an error, a bound or Ctrl-C stopped part-way
    bad_configuration: bool = False
    """An ERROR stop caused by bad set-up that only showed once a round ran (a model the provider
    does not know, ...): the CLI exits 2 for it, as for any configuration error."""
    waited: float = 0.0  # seconds spent waiting for a person (not counted by budget.seconds)
    unsandboxed: str | None = None
    """Why the agent's commands ran without a sandbox, when they did (also in ``warning``)."""
    origin: str | None = None  # the branch the run started from; None when HEAD was detached
    merged: bool = False  # a pass fast-forwarded into ``origin`` (``merge = true``)
    connectors: tuple[str, ...] = ()  # what each connector did, or why it failed
    best_round: int | None = None
    """The best round played by the order of :mod:`harness.outer.best` (gates, then the critic's
    score, the earlier on a tie), earlier sessions' rounds included; None when none was played."""
    best: str = ""  # that round described: ``round 2 (2/3 gates passed, critic 7.0/10)``
    removed: str = ""
    """What the run's end removed because no round did any work (its branch and worktree;
    :mod:`harness.outer.life_cycle`), or ``""``."""

    @property
    def passed(self) -> bool:
        return self.stop_reason is StopReason.PASSED

    @property
    def iterations(self) -> int:
        """The number of the last round played, or cut short (resumed rounds included)."""
        played = self.rounds[-1].round if self.rounds else self.first_round - 1
        return max(played, self.cut_short or 0)
