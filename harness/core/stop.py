"""Named reasons for a loop to stop. Every stop of every loop carries one."""

from __future__ import annotations

from enum import StrEnum


class StopReason(StrEnum):
    """Why a loop (the general engine or the outer loop) stopped."""

    PASSED = "PASSED"
    CONDITION_MET = "CONDITION_MET"
    MAX_ITERATIONS = "MAX_ITERATIONS"
    NO_PROGRESS = "NO_PROGRESS"
    BUDGET_TOKENS = "BUDGET_TOKENS"
    BUDGET_COST = "BUDGET_COST"
    TIMEOUT = "TIMEOUT"
    NO_BODY = "NO_BODY"
    EXIT = "EXIT"
    ERROR = "ERROR"
    CANCELLED = "CANCELLED"

    @property
    def is_success(self) -> bool:
        """A stop a person need not look at: the goal or the exit condition was reached."""
        return self in (StopReason.PASSED, StopReason.CONDITION_MET, StopReason.EXIT)
