"""The loop's own rules, declared and checked once.

:class:`LoopRules` is extended by :class:`~harness.outer.settings.Settings` (Python) and by
:class:`~harness.spec.LoopSpec` (loop.toml), so both take and refuse the same values the same
way. This module is light on purpose: reading a loop.toml must not import the driver.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from harness.core.budget import Budget
from harness.engine.bounds import ITERATIONS, Iterations
from harness.outer.loop_name import DEFAULT_LOOP_NAME, LOOP_NAME_PATTERN
from harness.tools.paths import check_protect_patterns

Earlier = Literal["resume", "restart", "carry", "reopen"]
"""What a run does with an earlier run of its loop: ``resume`` it where it stopped; ``restart``:
set its progress, spend and work file aside and start over; ``carry``: a loop that ended (passed,
escalated) starts over with what it learned, one under way is resumed; ``reopen``: a loop that
ended takes up its own branch again (a review came), one under way is resumed."""


Rollback = Literal["keep", "failed"]
"""``failed``: a failed round's changes are reset before the next round."""


class LoopRules(BaseModel):
    """The loop's own rules: the settings loop.toml and Python share, field for field.

    :class:`~harness.outer.settings.Settings` and :class:`~harness.spec.LoopSpec` both extend it,
    so a rule is declared and checked once and reaches the driver from either without a copy in
    between.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    # names the progress file and the run branch
    name: Annotated[str, Field(pattern=LOOP_NAME_PATTERN)] = DEFAULT_LOOP_NAME
    max_iterations: Iterations = ITERATIONS
    budget: Budget = Budget()
    isolation: Literal["auto", "worktree", "branch", "none"] = "auto"  # auto: worktree in git
    protect: tuple[str, ...] | None = None  # None: the test gates' paths and pytest's config
    # rounds failing the same way before the loop stops with NO_PROGRESS
    patience: Annotated[int, Field(ge=2, le=100, strict=True)] = 3
    rollback: Rollback = "keep"
    merge: bool = False  # fast-forward the user's branch when the run passes
    checklist: tuple[str, ...] = ()  # items a new progress file starts with
    keep_worktree: bool = False  # after a pass, leave the run's worktree to look at and try
    park: bool = True  # a finished run parks its worktree and gates' checkout for the next run

    @field_validator("protect")
    @classmethod
    def _protect(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if value is None else check_protect_patterns(value)


RULES = LoopRules()
"""The rules' defaults, for the keywords that take one of them."""
