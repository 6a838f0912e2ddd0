"""The shared per-model rate limit: calls spread evenly, whichever thread makes them."""

from __future__ import annotations

import threading
import time

import pytest

from harness.core.errors import ConfigError
from harness.models.rate_limit import RateLimitedModel, RateLimiter, shared_limiter
from harness.models.scripted import ScriptedModel


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


def test_calls_in_a_burst_wait_for_their_turns_and_a_late_call_does_not() -> None:
    clock = FakeClock()
    limiter = RateLimiter(60, clock=clock, sleep=clock.sleep)
    assert [limiter.acquire() for _ in range(3)] == [0, 1, 2]
    assert clock.slept == [1, 2]
    clock.now += 10  # long after the last turn
    assert limiter.acquire() == 0
    assert clock.slept == [1, 2]


def test_threads_share_one_limiter_per_model_name() -> None:
    assert shared_limiter("model-a", 120) is shared_limiter("model-a", 120)
    assert shared_limiter("model-a", 120) is not shared_limiter("model-b", 120)
    assert shared_limiter("model-a", 60).interval == 1.0  # a new rate replaces the old limiter


def test_a_limited_model_spaces_calls_from_many_threads() -> None:
    model = ScriptedModel(["ok"] * 6)
    limited = RateLimitedModel(model, RateLimiter(600))  # one call every 0.1 s
    starts: list[float] = []
    lock = threading.Lock()

    def call() -> None:
        reply = limited.complete([{"role": "user", "content": "hi"}])
        assert reply.content == "ok"
        with lock:
            starts.append(time.monotonic())

    threads = [threading.Thread(target=call) for _ in range(6)]
    began = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(model.calls) == 6
    assert time.monotonic() - began >= 0.5  # six calls, five intervals of 0.1 s
    assert limited.name == model.name
    assert limited.context_window == model.context_window


@pytest.mark.parametrize("rate", [0, -5, True])
def test_a_rate_that_is_not_positive_is_refused(rate: float) -> None:
    with pytest.raises(ConfigError, match="requests per minute"):
        RateLimiter(rate)
