"""The general loop engine: a body run round after round over typed loop variables.

A round calls ``body(ctx) -> output``. Before round 1 and after every round the exit
conditions are checked; the loop also ends when the body validates or exits, at
``max_iterations``, when a shared :class:`Watchdog` runs out, or when the body raises.
Every end carries a :class:`StopReason` and a message. Loops (and :class:`ForEach`) nest at
most :data:`MAX_DEPTH` deep (see :mod:`harness.engine.bounds`); the variables are in
:mod:`harness.engine.variables` and what a body receives in :mod:`harness.engine.body`.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import time
from collections.abc import Generator, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from harness.core.errors import ConfigError, Stopped
from harness.core.stop import StopReason
from harness.engine.body import (
    Body,
    LoopContext,
    call_async,
    describe,
    is_async,
    run_blocking,
)
from harness.engine.bounds import MAX_DEPTH, Frame, Watchdog, enter_loop
from harness.engine.condition import MISSING, Combine, Condition, ConditionSet, step
from harness.engine.variables import Variable, Vars, declare_variables

if TYPE_CHECKING:
    pass

__all__ = [
    "MAX_DEPTH",
    "MAX_ITERATIONS",
    "Loop",
    "LoopContext",
    "LoopResult",
    "RoundRecord",
    "Variable",
    "Watchdog",
    "check_max_iterations",
    "finish_message",
]

MAX_ITERATIONS = 100
"""The most rounds any loop may be given (the engine's, the outer loop's, the CLI's)."""


def check_max_iterations(value: object) -> int:
    """``value`` if it is a whole number from 1 to :data:`MAX_ITERATIONS`, else ConfigError."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ITERATIONS:
        raise ConfigError(
            f"max_iterations: must be an integer from 1 to {MAX_ITERATIONS}, got {value!r}"
        )
    return value


def finish_message(completed: int, reason: StopReason, detail: str = "") -> str:
    """How a loop ended, for people: ``Loop finished after 3 iteration(s): MAX_ITERATIONS``."""
    message = f"Loop finished after {completed} iteration(s): {reason}"
    return f"{message} ({detail})" if detail else message


@dataclass(frozen=True, slots=True)
class RoundRecord:
    """One round: its input and output, the variables after it, its duration, what it said."""

    round: int
    input: Any
    output: Any
    variables: dict[str, Any]
    seconds: float
    error: str | None = None
    passed: bool | None = None
    note: str = ""


@dataclass(frozen=True, slots=True)
class LoopResult:
    """How a loop ended: final variables, rounds completed, why, the last output, every round."""

    variables: dict[str, Any]
    loop_round: int
    stop_reason: StopReason
    output: Any
    history: tuple[RoundRecord, ...]
    message: str


class Loop:
    """Run ``body(ctx)`` round after round until a condition, a validator, an exit or the cap.

    ``variables`` is a mapping of initial values (types inferred) or a list of
    :class:`Variable`. ``until`` stops when its conditions hold, ``while_`` continues while
    they hold; each is a :class:`Condition`, a list of them joined by ``combine``, or a string
    (``"score >= 8"``, ``"a >= 1 and b == 2"``). A condition's path starts at ``loop_round``, a
    variable, ``output`` (the round's output) or a key of the output; before round 1 there is
    no output, so a condition on it is not met (and a ``while_`` on it ends the loop at once).

    In the body, ``ctx.validate(passed, reason)`` ends the loop with ``PASSED`` on a pass and
    ``ctx.exit(reason)`` with ``EXIT``; with neither, and no condition met, the loop gives up at
    ``max_iterations`` and ``result.message`` reads "Loop finished after 3 iteration(s):
    MAX_ITERATIONS".

    ``on_error="fail"`` re-raises a body's exception with a note naming the round;
    ``on_error="stop"`` ends the loop with ``ERROR`` instead. A body raising :class:`Stopped`
    ends the loop with that reason. Async bodies work with ``run()`` and ``await arun()``.
    """

    def __init__(
        self,
        body: Body | None,
        *,
        variables: Mapping[str, Any] | Iterable[Variable] | None = None,
        until: Condition | str | Iterable[Condition | str] | None = None,
        while_: Condition | str | Iterable[Condition | str] | None = None,
        combine: Combine = "and",
        max_iterations: int = 10,
        on_error: Literal["fail", "stop"] = "fail",
        watchdog: Watchdog | None = None,
    ) -> None:
        if body is not None and not callable(body):
            raise ConfigError(f"body: must be callable or None, got {type(body).__name__}")
        check_max_iterations(max_iterations)
        if on_error not in ("fail", "stop"):
            raise ConfigError(f"on_error: must be 'fail' or 'stop', got {on_error!r}")
        self.body = body
        self.variables = declare_variables(variables)
        self.until = ConditionSet.build(until, combine, "until")
        self.while_ = ConditionSet.build(while_, combine, "while_")
        self.max_iterations = max_iterations
        self.on_error = on_error
        self.watchdog = watchdog
        self._types = {name: v.type for name, v in self.variables.items()}
        self._async = is_async(body)

    def run(self, input: Any = None, *, variables: Mapping[str, Any] | None = None) -> LoopResult:
        """Run to the end. ``variables`` overrides initial values for this run."""
        if self._async:
            return run_blocking(self.arun(input, variables=variables))
        with enter_loop(self.watchdog, "Loop") as frame:
            rounds = self._rounds(input, variables, frame)
            body: Body = self.body  # type: ignore[assignment]
            try:
                ctx = next(rounds)
                while True:
                    try:
                        output = body(ctx)
                        if inspect.isawaitable(output):
                            if inspect.iscoroutine(output):
                                output.close()
                            raise ConfigError(
                                "body returned an awaitable; define it with async def"
                            )
                    except Exception as exc:
                        ctx = rounds.throw(exc)
                    else:
                        ctx = rounds.send(output)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]

    async def arun(
        self, input: Any = None, *, variables: Mapping[str, Any] | None = None
    ) -> LoopResult:
        """``run()`` for async code; a sync body runs in a worker thread."""
        if not self._async:
            return await asyncio.to_thread(self.run, input, variables=variables)
        with enter_loop(self.watchdog, "Loop") as frame:
            rounds = self._rounds(input, variables, frame)
            try:
                ctx = next(rounds)
                while True:
                    try:
                        output = await call_async(self.body, ctx, frame)  # type: ignore[arg-type]
                    except Exception as exc:
                        ctx = rounds.throw(exc)
                    else:
                        ctx = rounds.send(output)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]

    def _rounds(
        self, input: Any, overrides: Mapping[str, Any] | None, frame: Frame
    ) -> Generator[LoopContext, Any, LoopResult]:
        """The loop itself: yields each round's context, receives its output (or exception)."""
        state = Vars(self._types, {n: copy.deepcopy(v.value) for n, v in self.variables.items()})
        for name, value in (overrides or {}).items():
            state[name] = copy.deepcopy(value)
        history: list[RoundRecord] = []
        settled, output = state.snapshot(), None
        if self.body is None:
            return self._end(StopReason.NO_BODY, settled, history, None)
        if reason := self._condition_stop(state, 0, MISSING):
            return self._end(StopReason.CONDITION_MET, settled, history, None, reason)
        previous = input
        for number in range(1, self.max_iterations + 1):
            try:
                frame.admit()
            except Stopped as stop:
                return self._end(stop.reason, settled, history, output, stop.message)
            ctx = LoopContext(state, previous, number - 1, self.max_iterations)
            started = time.perf_counter()
            try:
                output = yield ctx
            except Exception as exc:
                elapsed = time.perf_counter() - started
                history.append(
                    RoundRecord(number, previous, None, state.snapshot(), elapsed, describe(exc))
                )
                if isinstance(exc, Stopped):
                    return self._end(exc.reason, settled, history, output, exc.message)
                if self.on_error == "fail":
                    exc.add_note(f"raised in loop round {number}")
                    raise
                detail = f"round {number}: {describe(exc)}"
                return self._end(StopReason.ERROR, settled, history, output, detail)
            settled = state.snapshot()
            elapsed = time.perf_counter() - started
            history.append(
                RoundRecord(number, previous, output, settled, elapsed, None, ctx.passed, ctx.note)
            )
            if ctx.stop is not None:
                return self._end(ctx.stop, settled, history, output, ctx.note)
            if reason := self._condition_stop(state, number, output):
                return self._end(StopReason.CONDITION_MET, settled, history, output, reason)
            previous = output
        last = history[-1] if history else None
        failed_check = last is not None and last.passed is False and last.note
        detail = f"the last check said: {last.note}" if failed_check and last else ""
        return self._end(StopReason.MAX_ITERATIONS, settled, history, output, detail)

    def _condition_stop(self, state: Vars, loop_round: int, output: Any) -> str:
        """Which exit condition ends the loop now, as text; empty if none does."""
        if self.until is None and self.while_ is None:
            return ""

        def root(name: str) -> Any:
            if name == "loop_round":
                return loop_round
            if name in state:
                return state[name]
            if output is MISSING or name == "output":
                return output
            return step(output, name)

        if self.until is not None and self.until.holds(root):
            return f"until {self.until}"
        if self.while_ is not None and not self.while_.holds(root):
            return f"while {self.while_} no longer holds"
        return ""

    @staticmethod
    def _end(
        reason: StopReason,
        variables: dict[str, Any],
        history: list[RoundRecord],
        output: Any,
        detail: str = "",
    ) -> LoopResult:
        completed = len(history) - (bool(history) and history[-1].error is not None)
        message = finish_message(completed, reason, detail)
        return LoopResult(variables, completed, reason, output, tuple(history), message)
