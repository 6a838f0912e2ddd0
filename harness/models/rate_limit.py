"""A shared per-model rate limit: requests per minute, spread evenly, across every thread.

A batch or a fleet runs many loops against the same model; without a shared limit they would
all call at once and draw a storm of 429 answers. :func:`shared_limiter` hands every loop of
this process the same :class:`RateLimiter` for a model name, and :class:`RateLimitedModel` waits
for its turn before each call: at most one call starts every ``60 / per_minute`` seconds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol

from harness.core.validation import positive_finite
from harness.models.base import Message, Model, Reply, ToolSchema
from harness.models.wrapper import Wrapper


class Limiter(Protocol):
    """Anything that makes a call wait for its turn (a local limiter, one shared by a cluster)."""

    def acquire(self) -> float: ...


class RateLimiter:
    """Calls start at least ``60 / per_minute`` seconds apart, whichever thread makes them."""

    def __init__(
        self,
        per_minute: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        positive_finite("requests per minute", per_minute)
        self.per_minute = per_minute
        self.interval = 60.0 / per_minute
        self._clock = clock
        self._sleep = sleep
        self._next = float("-inf")
        self._lock = threading.Lock()

    def acquire(self) -> float:
        """Wait for this call's turn; return how long it waited."""
        with self._lock:
            now = self._clock()
            start = max(now, self._next)
            self._next = start + self.interval
        wait = start - now
        if wait > 0:
            self._sleep(wait)
        return wait


_SHARED: dict[str, RateLimiter] = {}
_SHARED_LOCK = threading.Lock()


def shared_limiter(model: str, per_minute: float) -> RateLimiter:
    """The limiter every loop of this process uses for ``model`` (replaced if the rate changes)."""
    with _SHARED_LOCK:
        limiter = _SHARED.get(model)
        if limiter is None or limiter.per_minute != per_minute:
            limiter = _SHARED[model] = RateLimiter(per_minute)
        return limiter


class RateLimitedModel(Wrapper):
    """``model``, each call waiting for its turn at ``limiter`` first."""

    def __init__(self, model: Model, limiter: Limiter) -> None:
        self.inner = model
        self.limiter = limiter
        self.name = model.name
        self.max_tokens: int | None = getattr(model, "max_tokens", None)

    def complete(
        self,
        messages: list[Message],
        tools: list[ToolSchema] | None = None,
        *,
        max_tokens: int | None = None,
    ) -> Reply:
        self.limiter.acquire()
        return self.inner.complete(messages, tools, max_tokens=max_tokens)
