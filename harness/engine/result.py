"""What a loop hands back: :class:`LoopResult` with its :class:`RoundRecord` history, and
:class:`ForEachResult`, the outputs of a ForEach with how many succeeded."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from harness.core.stop import StopReason

DONE_REASONS = frozenset({StopReason.CONDITION_MET, StopReason.PASSED})
"""Stops where the loop's stop condition was met: an exit condition or a validator's pass."""


def finish_message(completed: int, reason: StopReason, detail: str = "") -> str:
    """How a loop ended, for people: ``Loop finished after 3 round(s): MAX_ITERATIONS``."""
    message = f"Loop finished after {completed} round(s): {reason!s}"
    return f"{message} ({detail})" if detail else message


class RoundRecord(NamedTuple):
    """One round: its input and output, the variables after it, its timing, what it said.

    ``started`` is the wall-clock time (seconds since the epoch) the round began, ``seconds``
    how long it took, ``steps`` how many bodies ran in it: 1 for the round's own body, plus
    every body of the loops nested in it.

    A named tuple, immutable like the result that holds it: one is made after every round, and
    a tuple is made several times faster than a frozen dataclass.
    """

    round: int
    input: Any
    output: Any
    variables: dict[str, Any]
    seconds: float
    error: str | None = None
    passed: bool | None = None
    note: str = ""
    steps: int = 1
    started: float = 0.0


class LoopResult(NamedTuple):
    """How a loop ended: final variables, rounds completed, why, the last output, every round.

    ``done`` says whether the stop condition was met (an exit condition or a validator's
    pass); ``message`` is one line for people, ``node_message`` the short form
    ``looped 3 (done)``, and ``node_output`` the last output with ``_iterations`` and
    ``_done`` added.

    A named tuple, immutable like its history: one is made per run (a nested loop's run
    included), and a tuple is made several times faster than a frozen dataclass.
    """

    variables: dict[str, Any]
    loop_round: int
    stop_reason: StopReason
    output: Any
    history: tuple[RoundRecord, ...]
    message: str

    @property
    def done(self) -> bool:
        return self.stop_reason in DONE_REASONS

    @property
    def node_message(self) -> str:
        """``looped N (done)``, ``looped N (max)``, or ``looped N (<reason>)`` for other stops."""
        if self.done:
            state = "done"
        elif self.stop_reason is StopReason.MAX_ITERATIONS:
            state = "max"
        else:
            state = self.stop_reason.value.lower()
        return f"looped {self.loop_round} ({state})"

    @property
    def node_output(self) -> dict[str, Any]:
        """The last output (a mapping's keys, else under ``"output"``) plus the loop's meta."""
        base = dict(self.output) if isinstance(self.output, Mapping) else {"output": self.output}
        return {**base, "_iterations": self.loop_round, "_done": self.done}


class ForEachResult(list[Any]):
    """The outputs of a ForEach in the items' order, with ``succeeded`` of ``total`` items.

    ``failed`` holds the indices of items recorded as ``{"error": ...}``; an item never started
    (after an exit) counts in ``total`` only. ``message`` reads ``foreach 3/4`` or
    ``foreach 3/4 (parallel)``.
    """

    def __init__(
        self,
        outputs: Iterable[Any],
        *,
        succeeded: int,
        total: int,
        failed: tuple[int, ...] = (),
        parallel: bool = False,
    ) -> None:
        super().__init__(outputs)
        self.succeeded = succeeded
        self.total = total
        self.failed = failed
        self.parallel = parallel

    @property
    def message(self) -> str:
        return f"foreach {self.succeeded}/{self.total}" + (" (parallel)" if self.parallel else "")
