"""Model calls run on threads that can be left behind: a call cut off at the time budget
goes on alone, and the caller does not wait for it.

The threads are daemons, kept and used again: a thread started for every call (and the
event loop litellm then needs in it, :mod:`harness.models.thread_loop`) cost a time-budgeted
run some 0.3 ms of CPU on each model request (``bench/gateway.py``). A thread whose call
hangs is simply not handed another until that call ends; the next call takes an idle thread
or starts one.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Pending(Generic[T]):
    """A call handed to a thread: its result, or what it raised, once it has ended."""

    def __init__(self, call: Callable[[], T]) -> None:
        self.call = call
        self.ended = threading.Event()
        self.result: T | None = None
        self.failure: BaseException | None = None

    def run(self) -> None:
        """Make the call (:attr:`ended` is set by the thread, once it is idle again)."""
        try:
            self.result = self.call()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            self.failure = exc

    def outcome(self) -> T:
        """The call's result, or raise what it raised (only once :attr:`ended` is set)."""
        if self.failure is not None:
            raise self.failure
        return self.result  # type: ignore[return-value]


class _Thread:
    """A daemon thread that runs the calls put in its inbox, one at a time, and goes back
    among the idle ones after each, before its caller hears that the call ended: a caller's
    next call finds it there."""

    def __init__(self) -> None:
        self.inbox: queue.SimpleQueue[Pending[Any]] = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="harness-model-call", daemon=True).start()

    def _serve(self) -> None:
        while True:
            pending = self.inbox.get()
            pending.run()
            _idle.put(self)
            pending.ended.set()


_idle: queue.LifoQueue[_Thread] = queue.LifoQueue()
"""The threads waiting for a call, the last one back first (its caches and event loop warm)."""


def start(call: Callable[[], T]) -> Pending[T]:
    """Run ``call`` on an idle thread (or a new one); wait for it with ``.ended``."""
    pending = Pending(call)
    try:
        thread = _idle.get_nowait()
    except queue.Empty:
        thread = _Thread()
    thread.inbox.put(pending)
    return pending
