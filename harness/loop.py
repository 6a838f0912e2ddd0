"""The general loop engine: a body run round after round over typed loop variables.

A round calls ``body(ctx) -> output``. Before round 1 and after every round the exit
conditions are checked; the loop also ends when the body validates or exits, at
``max_iterations``, when a shared :class:`Watchdog` runs out, or when the body raises.
Every end carries a :class:`StopReason` and a message. Loops (and :class:`ForEach`) nest at
most :data:`MAX_DEPTH` deep, counted per thread and task through a context variable.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import threading
import time
from collections.abc import Callable, Coroutine, Generator, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from harness.condition import MISSING, Combine, Condition, ConditionSet, step
from harness.errors import ConfigError, Stopped
from harness.stop import StopReason
from harness.template import render

if TYPE_CHECKING:
    from harness.foreach import ForEach as ForEach

MAX_DEPTH = 5
"""Loops inside loops (Loop or ForEach) run at most this many levels deep."""

MAX_ITERATIONS = 100
RESERVED_NAMES = frozenset({"loop_round", "loop"})

VarType = Literal["string", "number", "bool", "object", "array"]
Body = Callable[["LoopContext"], Any]
T = TypeVar("T")

_EMPTY: dict[str, Any] = {"string": "", "number": 0, "bool": False, "object": {}, "array": []}


def _conforms(kind: str, value: Any) -> bool:
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    expected = {"string": str, "bool": bool, "object": Mapping, "array": list | tuple}[kind]
    return isinstance(value, expected)


def _kind_of(value: Any) -> str | None:
    kinds = ("bool", "number", "string", "object", "array")
    return next((kind for kind in kinds if _conforms(kind, value)), None)


@dataclass(frozen=True, slots=True)
class Variable:
    """A typed loop variable, e.g. ``Variable("score", "number", 0)``.

    Names are identifiers other than ``loop_round`` and ``loop``. Without a value (or with
    ``None``) a variable starts at its type's empty value: ``""``, ``0``, ``False``, ``{}``, ``[]``.
    """

    name: str
    type: VarType
    value: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ConfigError(f"Variable.name: must be a non-empty identifier, got {self.name!r}")
        if self.name in RESERVED_NAMES:
            raise ConfigError(f"Variable.name: {self.name!r} is reserved by the loop engine")
        if self.type not in _EMPTY:
            raise ConfigError(
                f"Variable.type of {self.name!r}: one of {list(_EMPTY)}, got {self.type!r}"
            )
        if self.value is None:
            object.__setattr__(self, "value", copy.copy(_EMPTY[self.type]))
        elif not _conforms(self.type, self.value):
            raise ConfigError(
                f"Variable.value of {self.name!r}: {self.value!r} is not a {self.type}"
            )


def _declare(variables: Mapping[str, Any] | Iterable[Variable] | None) -> dict[str, Variable]:
    if variables is None:
        return {}
    if isinstance(variables, Mapping):
        declared = {}
        for name, value in variables.items():
            kind = _kind_of(value)
            if kind is None:
                raise ConfigError(
                    f"variables.{name}: cannot tell the type of {value!r}; "
                    "declare it as Variable(name, type, value)"
                )
            declared[name] = Variable(name, kind, value)  # type: ignore[arg-type]
        return declared
    declared = {}
    for variable in variables:
        if not isinstance(variable, Variable):
            raise ConfigError(f"variables: expected Variable items, got {variable!r}")
        if variable.name in declared:
            raise ConfigError(f"variables: duplicate name {variable.name!r}")
        declared[variable.name] = variable
    return declared


class Vars:
    """Loop variables as the body sees them: ``ctx.vars.score`` or ``ctx.vars["score"]``.

    Assignment is checked: an undeclared name or a value of the wrong type raises
    :class:`ConfigError` naming the variable.
    """

    __slots__ = ("_types", "_values")

    def __init__(self, types: Mapping[str, str], values: dict[str, Any]) -> None:
        object.__setattr__(self, "_types", types)
        object.__setattr__(self, "_values", values)

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"no loop variable {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __setitem__(self, name: str, value: Any) -> None:
        kind = self._types.get(name)
        if kind is None:
            raise ConfigError(
                f"no loop variable {name!r} to assign (declared: {sorted(self._types)})"
            )
        if not _conforms(kind, value):
            raise ConfigError(
                f"loop variable {name!r} is a {kind}; cannot assign {type(value).__name__} {value!r}"
            )
        self._values[name] = value

    def __contains__(self, name: object) -> bool:
        return name in self._values

    def __repr__(self) -> str:
        return f"Vars({self._values!r})"

    def get(self, name: str, default: Any = None) -> Any:
        return self._values.get(name, default)

    def snapshot(self) -> dict[str, Any]:
        """A copy that later assignments or in-place edits cannot change."""
        return {
            name: value if isinstance(value, str | int | float) else copy.deepcopy(value)
            for name, value in self._values.items()
        }


class LoopContext:
    """What a body receives: ``vars``, ``input`` (alias ``item``), ``index`` (0-based), ``total``.

    In a :class:`Loop`, ``input`` is the previous round's output (the loop's input in round
    1) and ``total`` is ``max_iterations``; in a :class:`ForEach` they are the item and the
    number of items. ``exit()`` and ``validate()`` take effect when the body returns.
    """

    __slots__ = ("vars", "input", "index", "total", "passed", "note", "stop")

    def __init__(self, vars: Vars, input: Any, index: int, total: int) -> None:
        self.vars = vars
        self.input = input
        self.index = index
        self.total = total
        self.passed: bool | None = None
        self.note = ""
        self.stop: StopReason | None = None

    @property
    def item(self) -> Any:
        return self.input

    def exit(self, reason: str = "") -> None:
        """End the loop after this round (a ForEach starts no further item): ``EXIT``."""
        self.stop, self.note = StopReason.EXIT, reason

    def validate(self, passed: bool, reason: str = "") -> bool:
        """Judge this round; a pass ends the loop after it with ``PASSED``. Returns ``passed``."""
        self.passed, self.note = passed, reason
        if passed:
            self.stop = StopReason.PASSED
        return passed

    def render(self, text: str) -> str:
        """Fill ``{{loop.index}}``, ``{{loop.item}}``, ``{{loop.total}}``, ``{{input}}`` and variables."""
        return render(text, self._root)

    def _root(self, name: str) -> Any:
        if name == "loop":
            return {"index": self.index, "item": self.input, "total": self.total}
        if name in self.vars:
            return self.vars[name]
        return self.input if name == "input" else MISSING


class Watchdog:
    """Bounds a whole run across nested loops and threads: wall time and body executions.

    The clock starts when the first loop using it starts. Every body call is admitted first;
    past either limit the admitting loop stops with ``TIMEOUT``. Async bodies are also cancelled
    at the deadline; a sync body cannot be interrupted and is stopped before its next call.
    """

    def __init__(self, seconds: float | None = None, max_bodies: int | None = None) -> None:
        if seconds is not None and (isinstance(seconds, bool) or not seconds > 0):
            raise ConfigError(f"Watchdog.seconds: must be a positive number, got {seconds!r}")
        if max_bodies is not None and (
            isinstance(max_bodies, bool) or not isinstance(max_bodies, int) or max_bodies < 1
        ):
            raise ConfigError(
                f"Watchdog.max_bodies: must be a positive integer, got {max_bodies!r}"
            )
        self.seconds = seconds
        self.max_bodies = max_bodies
        self._lock = threading.Lock()
        self._started: float | None = None
        self._bodies = 0

    @property
    def bodies(self) -> int:
        """Body calls admitted so far."""
        return self._bodies

    def start(self) -> None:
        with self._lock:
            if self._started is None:
                self._started = time.monotonic()

    def remaining(self) -> float | None:
        if self.seconds is None or self._started is None:
            return None
        return self.seconds - (time.monotonic() - self._started)

    def admit(self) -> None:
        """Count one body call, or raise :class:`Stopped` (``TIMEOUT``) past a limit."""
        with self._lock:
            left = self.remaining()
            if left is not None and left <= 0:
                raise Stopped(
                    StopReason.TIMEOUT, f"watchdog: the run passed its {self.seconds:g} s limit"
                )
            if self.max_bodies is not None and self._bodies >= self.max_bodies:
                raise Stopped(
                    StopReason.TIMEOUT,
                    f"watchdog: the run reached its limit of {self.max_bodies} body executions",
                )
            self._bodies += 1


@dataclass(frozen=True, slots=True)
class Frame:
    """The nesting level a loop runs at and the watchdogs that bound it."""

    depth: int = 0
    watchdogs: tuple[Watchdog, ...] = ()

    def admit(self) -> None:
        for watchdog in self.watchdogs:
            watchdog.admit()

    def remaining(self) -> float | None:
        left = [r for w in self.watchdogs if (r := w.remaining()) is not None]
        return min(left) if left else None


_OUTERMOST = Frame()
_FRAME: ContextVar[Frame] = ContextVar("harness_loop_frame", default=_OUTERMOST)


@contextmanager
def enter_loop(watchdog: Watchdog | None, kind: str) -> Iterator[Frame]:
    """One level deeper, with ``watchdog`` joining those of the enclosing loops."""
    outer = _FRAME.get()
    if outer.depth >= MAX_DEPTH:
        raise ConfigError(
            f"{kind}: loops nest at most {MAX_DEPTH} deep; this one would be level {outer.depth + 1}"
        )
    watchdogs = outer.watchdogs
    if watchdog is not None and watchdog not in watchdogs:
        watchdog.start()
        watchdogs = (*watchdogs, watchdog)
    token = _FRAME.set(frame := Frame(outer.depth + 1, watchdogs))
    try:
        yield frame
    finally:
        _FRAME.reset(token)


def is_async(body: object) -> bool:
    """Whether calling ``body`` gives a coroutine (an ``async def`` or an async ``__call__``)."""
    return inspect.iscoroutinefunction(body) or (
        callable(body) and inspect.iscoroutinefunction(type(body).__call__)
    )


async def call_async(body: Body, ctx: LoopContext, frame: Frame) -> Any:
    """Await an async body, cancelled with ``TIMEOUT`` when a watchdog's time runs out."""
    left = frame.remaining()
    if left is None:
        return await body(ctx)
    scope = asyncio.timeout(max(left, 0.0))
    try:
        async with scope:
            return await body(ctx)
    except TimeoutError:
        if scope.expired():
            raise Stopped(
                StopReason.TIMEOUT, "watchdog: the run's time ran out during a body"
            ) from None
        raise


def run_blocking(coroutine: Coroutine[Any, Any, T]) -> T:
    """Drive an async body from synchronous ``run()``; refused inside a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    coroutine.close()
    raise ConfigError("an async body cannot be run with run() inside an event loop; await arun()")


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


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
        if (
            isinstance(max_iterations, bool)
            or not isinstance(max_iterations, int)
            or not 1 <= max_iterations <= MAX_ITERATIONS
        ):
            raise ConfigError(
                f"max_iterations: must be an integer from 1 to {MAX_ITERATIONS}, got {max_iterations!r}"
            )
        if on_error not in ("fail", "stop"):
            raise ConfigError(f"on_error: must be 'fail' or 'stop', got {on_error!r}")
        self.body = body
        self.variables = _declare(variables)
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
        return self._end(StopReason.MAX_ITERATIONS, settled, history, output)

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
        message = f"Loop finished after {completed} iteration(s): {reason}"
        return LoopResult(
            variables,
            completed,
            reason,
            output,
            tuple(history),
            f"{message} ({detail})" if detail else message,
        )


def __getattr__(name: str) -> Any:
    if name == "ForEach":  # lives beside the engine it uses; importable from here too
        from harness.foreach import ForEach

        return ForEach
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
