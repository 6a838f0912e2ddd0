"""How an outer loop runs besides its goal, checks and bounds: its rules, bookkeeping, hooks.

:class:`LoopOptions` extends the loop's :class:`~harness.outer.rules.LoopRules` (which loop.toml's
:class:`~harness.spec.LoopSpec` extends too) with what only a running process can give: sinks,
callables, servers, a sandbox. :class:`~harness.outer.settings.Settings` extends it with the
loop's own keywords: one frozen object the loop's parts share.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, SkipValidation, field_validator

from harness.core.errors import ConfigError
from harness.core.redact import Redactor
from harness.core.section import named_errors
from harness.core.sink import NULL_SINK, EventSink
from harness.memory.run_state import RunState
from harness.outer.cascade import Cascade
from harness.outer.decision import RoundReport
from harness.outer.result import RunResult
from harness.outer.rules import LoopRules
from harness.sandbox import Sandbox
from harness.tools.mcp import McpServer
from harness.verify.gates import GateReport

RoundHook = str | Callable[[RoundReport], object]
"""Told of every recorded round: a command (run with the round as JSON on stdin) or a callable."""


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


Earlier = Literal["resume", "restart", "carry", "reopen"]
"""What a run does with an earlier run of its loop: ``resume`` it where it stopped; ``restart``:
set its progress, spend and work file aside and start over; ``carry``: a loop that ended (passed,
escalated) starts over with what it learned, one under way is resumed; ``reopen``: a loop that
ended takes up its own branch again (a review came), one under way is resumed."""


CriticArtifact = Literal["diff", "final"] | ArtifactFile
"""What the critic judges: the run's diff, the session's last answer, or a named file."""


@named_errors("options")
class LoopOptions(LoopRules):
    """Everything an :class:`~harness.outer.loop.OuterLoop` takes beyond the public keywords:
    the loop's rules, and what only a running process can give (sinks, callables, servers)."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    critic_artifact: CriticArtifact = "diff"
    earlier: Earlier = "resume"
    run_id: str = ""  # "" (or None): a new one
    start: str | None = None  # a commit a new run's branch starts from; None: HEAD
    events: SkipValidation[EventSink] = NULL_SINK
    loop_file: str | None = None  # the loop.toml the loop was built from, for a replay
    # None: the default redactor (the environment's secrets)
    redact: SkipValidation[Callable[[str], str]] = Field(default_factory=lambda: _redactor())
    on_round: SkipValidation[RoundHook | None] = None
    mcp: SkipValidation[tuple[McpServer, ...]] = ()  # started with the run, stopped at its end
    hook_sandbox: SkipValidation[Sandbox | None] = None  # None: the agent's sandbox
    pins: tuple[tuple[str, str], ...] = ()  # (path, sha256) of the configuration files read
    ci: SkipValidation[CiWait | None] = None  # waits for CI on each round that passed its checks
    on_finish: SkipValidation[FinishHook | None] = None  # the connectors, told of the result
    on_resume: SkipValidation[ResumeHook | None] = None  # carries what the earlier run kept
    cascade: SkipValidation[Cascade | None] = None  # the models rounds climb (the agent's first)

    @field_validator("on_round")
    @classmethod
    def _on_round(cls, value: RoundHook | None) -> RoundHook | None:
        if isinstance(value, str) and not value.strip():
            raise ValueError("give a command or a callable")
        return value

    @field_validator("run_id", "redact", mode="before")
    @classmethod
    def _default(cls, value: object, info: Any) -> object:
        if value is not None:
            return value
        return "" if info.field_name == "run_id" else _redactor()


def _redactor() -> Callable[[str], str]:
    return Redactor().redact_text
