"""What bounds a run of nested loops: the :class:`Watchdog` and the nesting depth.

Loops (and :class:`~harness.engine.foreach.ForEach`) nest at most :data:`MAX_DEPTH` deep, counted per
thread and task through a context variable; each level carries the watchdogs of the loops
around it, so one watchdog bounds everything inside the loop that was given it. A run with
no watchdog anywhere gets a default one of :data:`DEFAULT_MAX_BODIES` body executions.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from harness.core.errors import ConfigError, Stopped
from harness.core.stop import StopReason
from harness.core.validation import positive_finite

MAX_ITERATIONS = 100
"""The most rounds any loop may be given (the engine's, the outer loop's, the CLI's)."""


def check_max_iterations(value: object) -> int:
    """``value`` if it is a whole number from 1 to :data:`MAX_ITERATIONS`, else ConfigError."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ITERATIONS:
        raise ConfigError(
            f"max_iterations: must be an integer from 1 to {MAX_ITERATIONS}, got {value!r}"
        )
    return value


MAX_DEPTH = 5
"""Loops inside loops (Loop or ForEach) run at most this many levels deep."""

DEFAULT_MAX_BODIES = 200
"""Body executions a run may make when no loop in it was given a :class:`Watchdog`."""


class Watchdog:
    """Bounds a whole run across nested loops and threads: wall time and body executions.

    The clock starts when the first loop using it starts. Every body call is admitted first;
    past either limit the admitting loop stops with ``TIMEOUT``. Async bodies are also cancelled
    at the deadline; a sync body cannot be interrupted and is stopped before its next call.
    """

    def __init__(self, seconds: float | None = None, max_bodies: int | None = None) -> None:
        if seconds is not None:
            positive_finite("Watchdog.seconds", seconds)
        if max_bodies is not None and (
            isinstance(max_bodies, bool) or not isinstance(max_bodies, int) or max_bodies < 1
        ):
            raise ConfigError(
                f"Watchdog.max_bodies: must be a positive integer, got {max_bodies!r}"
            )
        self.seconds = seconds
        self.max_bodies = max_bodies
        self._hint = ""
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
                    f"watchdog: the run reached its limit of {self.max_bodies} body executions"
                    + self._hint,
                )
            self._bodies += 1


def default_watchdog() -> Watchdog:
    """The watchdog of a run that was given none: :data:`DEFAULT_MAX_BODIES` body executions."""
    watchdog = Watchdog(max_bodies=DEFAULT_MAX_BODIES)
    watchdog._hint = (
        " (the default; give the outermost loop watchdog=Watchdog(max_bodies=N) to change it)"
    )
    return watchdog


class Tally:
    """Body executions admitted inside one loop run, its nested loops included."""

    __slots__ = ("count", "_lock")

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    def add(self) -> None:
        with self._lock:
            self.count += 1


@dataclass(frozen=True, slots=True)
class Frame:
    """A loop's nesting level, the watchdogs that bound it and the tallies that count its bodies.

    ``sealed`` names an enclosing loop that refuses loops inside it (``allow_nested=False``).
    """

    depth: int = 0
    watchdogs: tuple[Watchdog, ...] = ()
    tallies: tuple[Tally, ...] = ()
    sealed: str = ""

    @property
    def tally(self) -> Tally:
        """This loop's own tally."""
        return self.tallies[-1]

    def admit(self) -> None:
        for watchdog in self.watchdogs:
            watchdog.admit()
        for tally in self.tallies:
            tally.add()

    def remaining(self) -> float | None:
        left = [r for w in self.watchdogs if (r := w.remaining()) is not None]
        return min(left) if left else None


_OUTERMOST = Frame()
_FRAME: ContextVar[Frame] = ContextVar("harness_loop_frame", default=_OUTERMOST)


@contextmanager
def enter_loop(
    watchdog: Watchdog | None, kind: str, *, allow_nested: bool = True
) -> Iterator[Frame]:
    """One level deeper, with ``watchdog`` joining those of the enclosing loops.

    With no watchdog here or around, the run gets :func:`default_watchdog`. With
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
    if watchdog is None and not watchdogs:
        watchdog = default_watchdog()
    if watchdog is not None and watchdog not in watchdogs:
        watchdog.start()
        watchdogs = (*watchdogs, watchdog)
    frame = Frame(
        outer.depth + 1, watchdogs, (*outer.tallies, Tally()), "" if allow_nested else kind
    )
    token = _FRAME.set(frame)
    try:
        yield frame
    finally:
        _FRAME.reset(token)
