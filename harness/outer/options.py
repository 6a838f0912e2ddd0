"""How an outer loop runs besides its goal, checks and bounds: round rules, bookkeeping, hooks.

:class:`LoopRules` declares and checks the rules once; :class:`LoopOptions` (Python) and
:class:`~harness.spec.LoopSpec` (loop.toml) both extend it, so they take and refuse the same
values the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SkipValidation, ValidationError, field_validator

from harness.core.errors import ConfigError
from harness.core.sink import NULL_SINK, EventSink
from harness.core.validation import format_validation_error
from harness.outer.decision import RoundReport
from harness.sandbox import Sandbox
from harness.tools.mcp import McpServer
from harness.tools.paths import check_protect_patterns

Patience = Annotated[int, Field(ge=2, le=100, strict=True)]
"""Rounds failing the same way before the loop stops with ``NO_PROGRESS``."""

Rollback = Literal["keep", "failed"]
"""``failed``: a failed round's changes are reset before the next round."""

LoopName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")]
"""Names the progress file and the run branch."""

RoundHook = str | Callable[[RoundReport], object]
"""Told of every recorded round: a command (run with the round as JSON on stdin) or a callable."""


@dataclass(frozen=True)
class ArtifactFile:
    """The critic judges this file (relative to the workspace) as the round delivered it."""

    path: str

    def __post_init__(self) -> None:
        if not self.path.strip():
            raise ConfigError("critic_artifact: give the file's path")


CriticArtifact = Literal["diff", "final"] | ArtifactFile
"""What the critic judges: the run's diff, the session's last answer, or a named file."""


class LoopRules(BaseModel):
    """The loop's own rules: the settings loop.toml and Python share, field for field.

    :class:`LoopOptions` and :class:`~harness.spec.LoopSpec` both extend it, so a rule is
    declared and checked once and reaches the driver from either without a copy in between.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: LoopName = "loop"
    protect: tuple[str, ...] | None = None  # None: the test gates' paths and pytest's config
    patience: Patience = 3
    rollback: Rollback = "keep"
    merge: bool = False  # fast-forward the user's branch when the run passes
    checklist: tuple[str, ...] = ()  # items a new progress file starts with
    keep_worktree: bool = False  # after a pass, leave the run's worktree to look at and try

    @field_validator("protect")
    @classmethod
    def _protect(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if value is None else check_protect_patterns(value)


class LoopOptions(LoopRules):
    """Everything an :class:`~harness.outer.loop.OuterLoop` takes beyond the public keywords:
    the loop's rules, and what only a running process can give (sinks, callables, servers)."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    critic_artifact: CriticArtifact = "diff"
    restart: bool = False  # set the old progress and spend aside and start over
    run_id: str | None = None  # None: a new one
    events: SkipValidation[EventSink] = NULL_SINK
    redact: SkipValidation[Callable[[str], str] | None] = None  # None: the default redactor
    on_round: SkipValidation[RoundHook | None] = None
    mcp: SkipValidation[tuple[McpServer, ...]] = ()  # started with the run, stopped at its end
    hook_sandbox: SkipValidation[Sandbox | None] = None  # None: the agent's sandbox

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise ConfigError(format_validation_error("options", exc)) from None

    @field_validator("on_round")
    @classmethod
    def _on_round(cls, value: RoundHook | None) -> RoundHook | None:
        if isinstance(value, str) and not value.strip():
            raise ValueError("give a command or a callable")
        return value
