"""What bounds a run of nested loops: the :class:`Watchdog` and the nesting depth.

Loops (and :class:`~harness.engine.foreach.ForEach`) nest at most :data:`MAX_DEPTH` deep, counted per
thread and task through a context variable; each level carries the watchdogs of the loops
around it, so one watchdog bounds everything inside the loop that was given it.
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

MAX_DEPTH = 5
"""Loops inside loops (Loop or ForEach) run at most this many levels deep."""


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
