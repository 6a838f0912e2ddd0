"""The kinds of value an outer loop's settings take beyond numbers and words: the critic's
artifact, what a run does with an earlier one, the hooks and waits it calls; and
:class:`LoopOptions`, the former spelling of its keywords."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from harness.core.errors import ConfigError
from harness.memory.run_state import RunState
from harness.outer.decision import RoundReport
from harness.outer.result import RunResult
from harness.verify.gates import GateReport

RoundHook = str | Callable[[RoundReport], object]
"""Told of every recorded round: a command (run with the round as JSON on stdin) or a callable."""

EscalationHook = str | Callable[[Path], object]
"""Told of the escalation report: a command (run with the report's path) or a callable."""


@dataclass(frozen=True)
class ArtifactFile:
    """The critic judges this file (relative to the workspace) as the round delivered it."""

    path: str

    def __post_init__(self) -> None:
        if not self.path.strip():
            raise ConfigError("critic_artifact: give the file's path")


@dataclass(frozen=True)
class CiRound:
    """A round that passed its checks, for the CI wait: its commit is on ``branch``."""

    round: int
    commit: str
    branch: str
    repo: Path  # a checkout of the repository (the run's worktree)
    origin: str | None  # the branch the run started from; None when HEAD was detached
    seconds_left: float | None  # of the run's time budget; None without one


CiWait = Callable[[CiRound], GateReport]
"""Publishes a passing round and waits for the host's checks on it: a gate named ``ci``."""

FinishHook = Callable[[RunResult], tuple[str, ...]]
"""Told of the run's result (connectors): one line for each thing it did or failed to do; it
must not raise, and cannot change the result."""


ResumeHook = Callable[[RunState, int], None]
"""Told, as a run resumes an earlier one (under the loop's lock, before its first round), of the
run state progress.md recorded and how many rounds were completed: it carries over what the
earlier run kept beside its rounds (a research loop's sources and claim ledger)."""


def new_run_id() -> str:
    """A run's id when none is given: 8 hex characters (they seed its branch's name)."""
    return uuid.uuid4().hex[:8]


CriticArtifact = Literal["diff", "final"] | ArtifactFile
"""What the critic judges: the run's diff, the session's last answer, or a named file."""


class LoopOptions(dict[str, Any]):
    """``OuterLoop(goal, agent, options=LoopOptions(patience=2))``: the loop's keywords beyond
    its own, gathered, as they were given before :class:`~harness.outer.loop.OuterLoop` took
    every field of :class:`~harness.outer.settings.Settings` as a keyword (``OuterLoop(goal,
    agent, patience=2)``). Kept for one release; checked, as keywords are, when the loop is made."""

    def __init__(self, **options: Any) -> None:
        super().__init__(options)
