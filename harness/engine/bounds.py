"""What bounds a run of nested loops: the :class:`Watchdog` and the nesting depth.

Loops (and :class:`~harness.engine.foreach.ForEach`) nest at most :data:`MAX_DEPTH` deep, counted per
thread and task through a context variable; each level carries the watchdogs of the loops
around it, so one watchdog bounds everything inside the loop that was given it. A run with
no watchdog anywhere is bounded by default to :data:`DEFAULT_MAX_BODIES` body executions,
counted by its outermost loop's tally (no watchdog is made for it: a run is cheaper so).

Admitting a body (checking and counting it against every watchdog, and counting it in the
tally of every loop around it) takes one lock for the whole process: one acquisition per body,
however deep the nesting, instead of one per watchdog and per tally.
"""

from __future__ import annotations

import threading
import time
from contextvars import ContextVar
from typing import Annotated

from pydantic import Field

from harness.core.errors import ConfigError, Stopped
from harness.core.section import check_value
from harness.core.stop import StopReason
from harness.core.validation import positive_finite

MAX_ITERATIONS = 100
"""The most rounds any loop may be given (the engine's, the outer loop's, the CLI's)."""

ITERATIONS = 10
"""The rounds a loop is given when it names none (the engine's, the outer loop's, loop.toml's)."""


Iterations = Annotated[int, Field(ge=1, le=MAX_ITERATIONS, strict=True)]
"""A loop's round cap: the type of every ``max_iterations`` (loop.toml's, a batch task's), which
the engine and the outer loop check their keyword with."""

_Bodies = Annotated[int, Field(ge=1, strict=True)]  # Watchdog.max_bodies


def check_max_iterations(value: object) -> int:
    """``value`` if it is a whole number from 1 to :data:`MAX_ITERATIONS`, else ConfigError."""
    return int(check_value(Iterations, value, "max_iterations"))


MAX_DEPTH = 5
"""Loops inside loops (Loop or ForEach) run at most this many levels deep."""

DEFAULT_MAX_BODIES = 200
"""Body executions a run may make when no loop in it was given a :class:`Watchdog`."""

_ADMISSION = threading.Lock()
"""Guards every watchdog's body count and clock start, and every tally."""


class Watchdog:
    """Bounds a whole run across nested loops and threads: wall time and body executions.

    The clock starts when the first loop using it starts. Every body call is admitted first;
    past either limit the admitting loop stops with ``TIMEOUT``. Async bodies are also cancelled
    at the deadline; a sync body cannot be interrupted and is stopped before its next call.
    """

    def __init__(self, seconds: float | None = None, max_bodies: int | None = None) -> None:
        if seconds is not None:
            positive_finite("Watchdog.seconds", seconds)
        if max_bodies is not None:
            check_value(_Bodies, max_bodies, "Watchdog.max_bodies")
        self.seconds = seconds
        self.max_bodies = max_bodies
        self._started: float | None = None
        self._deadline: float | None = None  # on the monotonic clock, once started
        self._bodies = 0

    @property
    def bodies(self) -> int:
        """Body calls admitted so far."""
        return self._bodies

    def start(self) -> None:
        with _ADMISSION:
            if self._started is None:
                self._started = time.monotonic()
                if self.seconds is not None:
                    self._deadline = self._started + self.seconds

    def remaining(self) -> float | None:
        if self._deadline is None:
            return None
        return self._deadline - time.monotonic()

    def _admit(self) -> None:
        """Count one body call, or raise :class:`Stopped` (``TIMEOUT``) past a limit; called
        by :meth:`Frame.admit` with the admission lock held."""
        if self._deadline is not None and time.monotonic() >= self._deadline:
            raise Stopped(
                StopReason.TIMEOUT, f"watchdog: the run passed its {self.seconds:g} s limit"
            )
        if self.max_bodies is not None and self._bodies >= self.max_bodies:
            raise Stopped(
                StopReason.TIMEOUT,
                f"watchdog: the run reached its limit of {self.max_bodies} body executions",
            )
        self._bodies += 1


_DEFAULT_CAP = (
    f"watchdog: the run reached its limit of {DEFAULT_MAX_BODIES} body executions (the default;"
    " give the outermost loop watchdog=Watchdog(max_bodies=N) to change it)"
)
"""Why a run given no watchdog stops at :data:`DEFAULT_MAX_BODIES` body executions."""


class Tally:
    """Body executions admitted inside one loop run, its nested loops included (counted by
    :meth:`Frame.admit`, under the admission lock)."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


class Frame:
    """A loop's nesting level, the watchdogs that bound it and the tallies that count its bodies.

    ``sealed`` names an enclosing loop that refuses loops inside it (``allow_nested=False``);
    ``capped``: the run was given no watchdog, so its outermost tally (``tallies[0]``) may
    count at most :data:`DEFAULT_MAX_BODIES`. Its fields never change once made (a plain class
    with slots: one is made per loop run); ``with frame:`` makes it the current one (itself a
    context manager rather than a ``contextmanager`` generator or a wrapper: it is entered once
    per loop run, nested runs included).
    """

    __slots__ = ("_token", "capped", "depth", "sealed", "tallies", "watchdogs")

    def __init__(
        self,
        depth: int = 0,
        watchdogs: tuple[Watchdog, ...] = (),
        tallies: tuple[Tally, ...] = (),
        sealed: str = "",
        capped: bool = False,
    ) -> None:
        self.depth = depth
        self.watchdogs = watchdogs
        self.tallies = tallies
        self.sealed = sealed
        self.capped = capped

    def admit(self) -> None:
        """Admit one body: the default cap and every watchdog check it, every watchdog and
        every tally counts it."""
        with _ADMISSION:
            if self.capped and self.tallies[0].count >= DEFAULT_MAX_BODIES:
                raise Stopped(StopReason.TIMEOUT, _DEFAULT_CAP)
            for watchdog in self.watchdogs:
                watchdog._admit()
            for tally in self.tallies:
                tally.count += 1

    def remaining(self) -> float | None:
        left = [r for w in self.watchdogs if (r := w.remaining()) is not None]
        return min(left) if left else None

    def __enter__(self) -> Frame:
        self._token = _FRAME.set(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _FRAME.reset(self._token)


_OUTERMOST = Frame()
_FRAME: ContextVar[Frame] = ContextVar("harness_loop_frame", default=_OUTERMOST)


def enter_loop(watchdog: Watchdog | None, kind: str, *, allow_nested: bool = True) -> Frame:
    """One level deeper, with ``watchdog`` joining those of the enclosing loops: use it as
    ``with enter_loop(...) as frame``.

    With no watchdog here or around, the run is capped at :data:`DEFAULT_MAX_BODIES`. With
    ``allow_nested=False`` any loop started inside this one is refused.
    """
    outer = _FRAME.get()
    if outer.sealed:
        raise ConfigError(
            f"{kind}: the enclosing {outer.sealed} was built with allow_nested=False; "
            "it refuses loops inside its body"
        )
    if outer.depth >= MAX_DEPTH:
        raise ConfigError(
            f"{kind}: loops nest at most {MAX_DEPTH} deep; this one would be level {outer.depth + 1}"
        )
    watchdogs = outer.watchdogs
    capped = outer.capped if outer.depth else watchdog is None
    if watchdog is not None and watchdog not in watchdogs:
        watchdog.start()
        watchdogs = (*watchdogs, watchdog)
    sealed = "" if allow_nested else kind
    return Frame(outer.depth + 1, watchdogs, (*outer.tallies, Tally()), sealed, capped)
