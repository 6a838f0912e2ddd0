"""A time-budgeted model call runs on a thread that is used again, and one left behind at the
deadline is never waited for."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from harness.core.errors import Stopped
from harness.models import call_threads
from harness.models.base import ModelError
from harness.models.budget import Budget, Meter, MeteredModel
from harness.models.scripted import ScriptedModel

USER = [{"role": "user", "content": "go"}]


def noting(threads: list[threading.Thread], answer: str = "ok") -> Any:
    def entry(messages: Any, tools: Any) -> str:
        threads.append(threading.current_thread())
        return answer

    return entry


def test_one_thread_serves_call_after_call() -> None:
    threads: list[threading.Thread] = []
    model = MeteredModel(
        ScriptedModel([noting(threads, f"answer {n}") for n in range(5)]),
        Meter(Budget(seconds=60)),
    )
    answers = [model.complete(USER).content for _ in range(5)]
    assert answers == [f"answer {n}" for n in range(5)]
    assert threads[0] is not threading.current_thread()  # the deadline needs a thread of its own
    assert all(thread is threads[0] for thread in threads)  # before: a thread started per call


def test_with_other_threads_idle_call_after_call_still_takes_the_same_one() -> None:
    both = threading.Barrier(2)

    def together() -> threading.Thread:
        both.wait(10)  # two calls at once: two threads, both idle afterwards
        return threading.current_thread()

    first, second = call_threads.start(together), call_threads.start(together)
    assert first.ended.wait(10)
    assert second.ended.wait(10)
    assert first.outcome() is not second.outcome()
    used = []
    for _ in range(20):
        pending = call_threads.start(threading.current_thread)
        assert pending.ended.wait(10)
        used.append(pending.outcome())
    assert all(thread is used[0] for thread in used)  # the last one back, every time


def test_a_call_left_behind_at_the_deadline_holds_up_no_later_call() -> None:
    release, started = threading.Event(), threading.Event()
    threads: list[threading.Thread] = []

    def hangs(messages: Any, tools: Any) -> str:
        threads.append(threading.current_thread())
        started.set()
        release.wait(60)
        return "too late"

    try:
        cut = MeteredModel(ScriptedModel([hangs]), Meter(Budget(seconds=0.3)))
        with pytest.raises(Stopped):
            cut.complete(USER)
        assert started.is_set()
        model = MeteredModel(
            ScriptedModel([noting(threads, "meanwhile")]), Meter(Budget(seconds=5))
        )
        assert model.complete(USER).content == "meanwhile"  # not queued behind the hung call
        assert threads[1] is not threads[0]
        assert not release.is_set()  # the hung call was still running meanwhile
    finally:
        release.set()


class Failing(ScriptedModel):
    def complete(self, *args: Any, **kwargs: Any) -> Any:
        raise ModelError("model m: rate limit: gave up after 3 attempts")


def test_what_the_call_raises_reaches_the_caller_and_the_thread_serves_on() -> None:
    meter = Meter(Budget(seconds=60))
    with pytest.raises(ModelError, match="gave up after 3 attempts"):
        MeteredModel(Failing(["unused"]), meter).complete(USER)
    threads: list[threading.Thread] = []
    assert MeteredModel(ScriptedModel([noting(threads)]), meter).complete(USER).content == "ok"
