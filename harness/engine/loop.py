"""The general loop engine: a body run round after round over typed loop variables.

A round calls ``body(ctx) -> output``. Before round 1 (unless ``do_while``) and after every
round the exit conditions are checked; the loop also ends when the body validates or exits,
at ``max_iterations``, when a :class:`Watchdog` runs out, or when the body raises. Every end
carries a :class:`StopReason` and a message. Loops (and :class:`ForEach`) nest at most
:data:`MAX_DEPTH` deep (see :mod:`harness.engine.bounds`); the variables are in
:mod:`harness.engine.variables`, what a body receives in :mod:`harness.engine.body` and what a
loop returns in :mod:`harness.engine.result`.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import time
from collections.abc import Callable, Generator, Iterable, Mapping
from typing import Any, Literal

from harness.core.errors import ConfigError, Stopped
from harness.core.stop import StopReason
from harness.engine.body import (
    Body,
    LoopContext,
    RoundEnded,
    call_async,
    describe,
    is_async,
    run_blocking,
    stray,
)
from harness.engine.bounds import (
    ITERATIONS,
    MAX_DEPTH,
    MAX_ITERATIONS,
    Frame,
    Watchdog,
    check_max_iterations,
    enter_loop,
)
from harness.engine.condition import Combine, ConditionSpec, exit_conditions
from harness.engine.reference import MISSING, Root, step
from harness.engine.result import LoopResult, RoundRecord, finish_message
from harness.engine.variables import NO_VARS, Variable, Vars, declare_variables

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

ROOTS = ("loop_round", "output", "history", "vars", "loop")
"""The roots a loop's conditions may name besides its variables (``$output``, ``$history[-1]``)."""

_new = tuple.__new__
"""Makes a named tuple from its fields in order, in one C call (its own ``__new__`` is a Python
function with a parameter per field): a round's record and a run's result are made so."""

_PLAIN = frozenset({type(None), bool, int, float, str, bytes, dict, list, tuple})
"""Types of body output that cannot be awaitable, so the check for one is skipped (exact types:
a subclass may define ``__await__``)."""


class Loop:
    """Run ``body(ctx)`` round after round until a condition, a validator, an exit or the cap.

    ``variables`` is a mapping of initial values (types inferred) or a list of
    :class:`Variable`. ``until`` stops when its conditions hold, ``while_`` continues while
    they hold; each is a :class:`Condition`, a list of them joined by ``combine``, or text
    (``"score >= 8"``, ``"a >= 1 and b == 2"``, a bare ``"needs_retry"``). With neither, the
    loop stops when the round's output has ``done == true``; an empty string means no
    condition at all (run to the cap). Conditions are checked before round 1 unless
    ``do_while``, and after every round.

    In the body, a passing ``ctx.validate(passed, reason)`` ends the round at once and the loop
    with ``PASSED``; ``ctx.exit(reason)`` ends it with ``EXIT`` after the round. A loop that
    stops short of success has *given up*: ``give_up_message`` replaces its message and
    ``on_give_up(result)`` is called once.

    ``feedback=False`` gives every round the loop's input instead of the previous output;
    ``allow_nested=False`` refuses loops inside the body. ``on_error="fail"`` re-raises a
    body's exception with a note naming the round; ``on_error="stop"`` ends with ``ERROR``.
    Async bodies work with ``run()`` and ``await arun()``.
    """

    def __init__(
        self,
        body: Body | None,
        *,
        variables: Mapping[str, Any] | Iterable[Variable] | None = None,
        until: ConditionSpec = None,
        while_: ConditionSpec = None,
        combine: Combine = "and",
        max_iterations: int = ITERATIONS,
        on_error: Literal["fail", "stop"] = "fail",
        watchdog: Watchdog | None = None,
        do_while: bool = False,
        feedback: bool = True,
        allow_nested: bool = True,
        give_up_message: str | None = None,
        on_give_up: Callable[[LoopResult], Any] | None = None,
    ) -> None:
        if body is not None and not callable(body):
            raise ConfigError(f"body: must be callable or None, got {type(body).__name__}")
        check_max_iterations(max_iterations)
        if on_error not in ("fail", "stop"):
            raise ConfigError(f"on_error: must be 'fail' or 'stop', got {on_error!r}")
        if give_up_message is not None and not isinstance(give_up_message, str):
            raise ConfigError(
                f"give_up_message: must be text, got {type(give_up_message).__name__}"
            )
        if on_give_up is not None and not callable(on_give_up):
            raise ConfigError(f"on_give_up: must be callable, got {type(on_give_up).__name__}")
        self.body = body
        self.variables = declare_variables(variables)
        self.until, self.while_ = exit_conditions(until, while_, combine)
        roots = (*self.variables, *ROOTS)
        for field, conditions in (("until", self.until), ("while_", self.while_)):
            if conditions is not None:
                conditions.check_roots(roots, field)
        self.max_iterations = max_iterations
        self.on_error = on_error
        self.watchdog = watchdog
        self.do_while = do_while
        self.feedback = feedback
        self.allow_nested = allow_nested
        self.give_up_message = give_up_message or None
        self.on_give_up = on_give_up
        self._types = {name: v.type for name, v in self.variables.items()}
        self._async = is_async(body)

    def run(self, input: Any = None, *, variables: Mapping[str, Any] | None = None) -> LoopResult:
        """Run to the end. ``variables`` overrides initial values for this run."""
        if self._async:
            return run_blocking(self.arun(input, variables=variables))
        with enter_loop(self.watchdog, "Loop", allow_nested=self.allow_nested) as frame:
            rounds = self._rounds(input, variables, frame)
            body: Body = self.body  # type: ignore[assignment]
            try:
                ctx = next(rounds)
                while True:
                    try:
                        output = body(ctx)
                        if type(output) not in _PLAIN and inspect.isawaitable(output):
                            if inspect.iscoroutine(output):
                                output.close()
                            raise ConfigError(
                                "body returned an awaitable; define it with async def"
                            )
                    except RoundEnded as ended:
                        if ended.ctx is not ctx:
                            raise stray(ended, frame) from None
                        ctx = rounds.send(ended.output)
                    except Exception as exc:
                        ctx = rounds.throw(exc)
                    else:
                        ctx = rounds.send(output)
            except StopIteration as stop:
                result: LoopResult = stop.value
        return result if self.on_give_up is None else self._settle(result)

    async def arun(
        self, input: Any = None, *, variables: Mapping[str, Any] | None = None
    ) -> LoopResult:
        """``run()`` for async code; a sync body runs in a worker thread."""
        if not self._async:
            return await asyncio.to_thread(self.run, input, variables=variables)
        with enter_loop(self.watchdog, "Loop", allow_nested=self.allow_nested) as frame:
            rounds = self._rounds(input, variables, frame)
            try:
                ctx = next(rounds)
                while True:
                    try:
                        output = await call_async(self.body, ctx, frame)  # type: ignore[arg-type]
                    except RoundEnded as ended:
                        if ended.ctx is not ctx:
                            raise stray(ended, frame) from None
                        ctx = rounds.send(ended.output)
                    except Exception as exc:
                        ctx = rounds.throw(exc)
                    else:
                        ctx = rounds.send(output)
            except StopIteration as stop:
                result: LoopResult = stop.value
        return result if self.on_give_up is None else self._settle(result)

    def _rounds(
        self, input: Any, overrides: Mapping[str, Any] | None, frame: Frame
    ) -> Generator[LoopContext, Any, LoopResult]:
        """The loop itself: yields each round's context, receives its output (or exception)."""
        snapshot: Callable[[], dict[str, Any]]
        if self._types:
            values = {n: copy.deepcopy(v.value) for n, v in self.variables.items()}
            state = Vars(self._types, values)
            snapshot = state.snapshot
        else:  # no variables: none to copy, snapshot or assign
            values, state, snapshot = {}, NO_VARS, dict
        if overrides:
            for name, value in overrides.items():
                state[name] = copy.deepcopy(value)
        history: list[RoundRecord] = []
        settled, output = snapshot(), None
        if self.body is None:
            return self._end(StopReason.NO_BODY, settled, history, None)
        conditions = self.until is not None or self.while_ is not None
        root = self._root(state, values, history) if conditions else None
        if root is not None and not self.do_while and (reason := self._condition_stop(root)):
            return self._end(StopReason.CONDITION_MET, settled, history, None, reason)
        previous, tally = input, frame.tallies[-1]
        for number in range(1, self.max_iterations + 1):
            before = tally.count
            try:
                frame.admit()
            except Stopped as stop:
                return self._end(stop.reason, settled, history, output, stop.message)
            ctx = LoopContext(state, previous, number - 1, self.max_iterations)
            started, clock = time.time(), time.perf_counter()
            try:
                output = yield ctx
            except Exception as exc:
                seconds, steps = time.perf_counter() - clock, tally.count - before
                after, error = snapshot(), describe(exc)
                history.append(
                    RoundRecord(
                        number, previous, None, after, seconds, error, None, "", steps, started
                    )
                )
                if isinstance(exc, Stopped):
                    return self._end(exc.reason, settled, history, output, exc.message)
                if self.on_error == "fail":
                    exc.add_note(f"raised in loop round {number}")
                    raise
                detail = f"round {number}: {error}"
                return self._end(StopReason.ERROR, settled, history, output, detail)
            settled = snapshot()
            seconds, steps = time.perf_counter() - clock, tally.count - before
            record = (number, previous, output, settled, seconds, None, ctx.passed, ctx.note,
                      steps, started)  # fmt: skip
            history.append(_new(RoundRecord, record))
            if ctx.stop is not None:
                return self._end(ctx.stop, settled, history, output, ctx.note)
            if root is not None and (reason := self._condition_stop(root)):
                return self._end(StopReason.CONDITION_MET, settled, history, output, reason)
            if self.feedback:
                previous = output
        last = history[-1] if history else None
        failed_check = last is not None and last.passed is False and last.note
        detail = f"the last check said: {last.note}" if failed_check and last else ""
        return self._end(StopReason.MAX_ITERATIONS, settled, history, output, detail)

    def _root(self, state: Vars, values: dict[str, Any], history: list[RoundRecord]) -> Root:
        """What a condition's root names: ``loop_round``, a variable (``values``, the dict
        ``state`` holds), ``output``, ``history``, ``vars``, ``loop``, else a field of the
        output. Conditions are checked before round 1 and after each round that returned, so
        the last of ``history`` is the round they judge (none before round 1)."""
        total = self.max_iterations

        def root(name: str) -> Any:
            if name == "loop_round":
                return len(history)
            if name in values:
                return values[name]
            output = history[-1].output if history else MISSING
            if name == "output":
                return output
            if name == "history":
                return history
            if name == "vars":
                return state.view()
            if name == "loop":
                last = {"index": len(history) - 1, "item": output} if history else {}
                return {**last, "total": total}
            return MISSING if output is MISSING else step(output, name)

        return root

    def _condition_stop(self, root: Root) -> str:
        """Which exit condition ends the loop now, as text; empty if none does."""
        if self.until is not None and self.until.holds(root):
            return f"until {self.until}"
        if self.while_ is not None and not self.while_.holds(root):
            return f"while {self.while_} no longer holds"
        return ""

    def _end(
        self,
        reason: StopReason,
        variables: dict[str, Any],
        history: list[RoundRecord],
        output: Any,
        detail: str = "",
    ) -> LoopResult:
        completed = len(history) - (bool(history) and history[-1].error is not None)
        message = finish_message(completed, reason, detail)
        if self.give_up_message and not reason.is_success:
            message = self.give_up_message
        return _new(LoopResult, (variables, completed, reason, output, tuple(history), message))

    def _settle(self, result: LoopResult) -> LoopResult:
        """Call ``on_give_up`` when the loop stopped short of success."""
        if self.on_give_up is not None and not result.stop_reason.is_success:
            self.on_give_up(result)
        return result
