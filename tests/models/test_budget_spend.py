"""The budget over a loop's whole life: earlier processes' spend, saving it, and hung calls."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from typing import Any

import pytest

from harness.core.errors import Stopped
from harness.core.stop import StopReason
from harness.core.usage import Usage
from harness.models.base import Reply
from harness.models.budget import Budget, Meter, MeteredModel
from harness.models.scripted import ScriptedModel
from tests.conftest import RecordingSink

USER = [{"role": "user", "content": "Say hello."}]


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_what_earlier_processes_spent_counts_against_the_token_budget() -> None:
    meter = Meter(Budget(tokens=100), prior=Usage(25, 5))
    meter.record(Usage(8, 2))
    assert (meter.usage, meter.total) == (Usage(8, 2), Usage(33, 7))
    meter.check(60, 0.0)  # 30 earlier + 10 now + 60 = 100: fits exactly
    with pytest.raises(Stopped) as stop:
        meter.check(61, 0.0)
    assert stop.value.reason is StopReason.BUDGET_TOKENS
    assert (
        stop.value.message == "token budget: 40 used + up to 61 for the next call would exceed 100"
    )


def test_what_earlier_processes_spent_counts_against_the_cost_budget() -> None:
    meter = Meter(Budget(cost_usd=1.0), prior=Usage(cost_usd=0.5))
    meter.record(Usage(cost_usd=0.25))
    meter.check(0, 0.25)
    with pytest.raises(Stopped) as stop:
        meter.check(0, 0.25 + 2**-20)
    assert stop.value.reason is StopReason.BUDGET_COST
    assert stop.value.message.startswith("cost budget: $0.7500 used + up to $0.2500")


def test_earlier_processes_time_counts_against_the_time_budget() -> None:
    clock = Clock(1000.0)
    meter = Meter(Budget(seconds=30), clock=clock, prior_seconds=12.0)
    assert meter.remaining_seconds() == 18.0
    clock.now = 1017.5
    assert meter.remaining_seconds() == 0.5
    meter.check(0, 0.0)
    clock.now = 1018.0
    assert meter.remaining_seconds() == 0.0
    with pytest.raises(Stopped) as stop:
        meter.check_time()
    assert (stop.value.reason, stop.value.message) == (
        StopReason.TIMEOUT, "time budget of 30s used (30.0s elapsed)",
    )  # fmt: skip
    clock.now = 1100.0
    assert meter.remaining_seconds() == 0.0  # never below zero
    assert Meter(clock=clock, prior_seconds=5.0).remaining_seconds() is None


def test_describe_remaining_subtracts_what_earlier_processes_spent() -> None:
    clock = Clock(0.0)
    meter = Meter(
        Budget(tokens=1000, cost_usd=3.0, seconds=100), clock=clock,
        prior=Usage(200, 100, 1.0), prior_seconds=40.0,
    )  # fmt: skip
    meter.record(Usage(50, 50, 0.5))
    clock.now = 10.0
    assert meter.describe_remaining() == "600 tokens, $1.5000, 50s"


def test_every_recorded_call_is_handed_to_on_record_with_the_new_totals() -> None:
    seen: list[tuple[Usage, Usage]] = []
    meter = Meter(prior=Usage(1, 1), on_record=lambda m: seen.append((m.usage, m.total)))
    meter.check(10, 1.0)
    assert seen == []  # checking is not spending
    meter.record(Usage(3, 4))
    meter.record(Usage(1, 0))
    assert seen == [(Usage(3, 4), Usage(4, 5)), (Usage(4, 4), Usage(5, 5))]


def test_a_metered_call_is_saved_through_on_record() -> None:
    saved: list[Usage] = []
    meter = Meter(on_record=lambda m: saved.append(m.usage))
    reply = MeteredModel(ScriptedModel(["hi"]), meter).complete(USER)
    assert saved == [reply.usage]


def hang(release: threading.Event) -> Any:
    def entry(messages: Any, tools: Any) -> str:
        release.wait(60)
        return "too late"

    return entry


def test_a_model_call_that_hangs_is_cut_off_when_the_time_budget_runs_out() -> None:
    release = threading.Event()
    model = ScriptedModel([hang(release)])
    model.count_tokens(USER)  # the tokenizer loaded before the budget's clock starts
    meter = Meter(Budget(seconds=0.3))
    started = time.monotonic()
    try:
        with pytest.raises(Stopped) as stop:
            MeteredModel(model, meter).complete(USER)
        waited = time.monotonic() - started
    finally:
        release.set()
    assert stop.value.reason is StopReason.TIMEOUT
    assert stop.value.message.startswith(
        "time budget of 0.3s used: a model call was cut off after 0."
    )
    assert 0.2 < waited < 30  # the budget cut it, not the hang's end
    assert meter.usage == Usage()  # what the abandoned call cost is not known


def test_a_call_that_finishes_within_the_time_budget_is_returned_and_recorded() -> None:
    meter = Meter(Budget(seconds=60))
    reply = MeteredModel(ScriptedModel(["in time"]), meter).complete(USER)
    assert reply.content == "in time"
    assert meter.usage == reply.usage
    assert reply.usage.calls == 1


class Failing(ScriptedModel):
    def complete(self, messages: Any, tools: Any = None, *, max_tokens: Any = None) -> Reply:
        self.thread = threading.current_thread().name
        raise ConnectionError("provider went away")


@pytest.mark.parametrize("seconds", [None, 60.0])
def test_a_model_error_reaches_the_caller_unchanged_with_or_without_a_time_budget(
    seconds: float | None,
) -> None:
    model = Failing()
    meter = Meter(Budget(seconds=seconds))
    with pytest.raises(ConnectionError, match="^provider went away$"):
        MeteredModel(model, meter).complete(USER)
    assert meter.usage == Usage()
    # only a time budget needs the call on a thread it can abandon
    expected = "harness-model-call" if seconds else threading.current_thread().name
    assert model.thread == expected


class Unpriced(ScriptedModel):
    def complete(self, messages: Any, tools: Any = None, *, max_tokens: Any = None) -> Reply:
        return Reply("ok", [], Usage(10, 2, 0.0, calls=1, unpriced_calls=1, cached_tokens=6))


def test_the_call_event_says_when_a_call_had_no_price_and_what_the_cache_served() -> None:
    sink = RecordingSink()
    MeteredModel(Unpriced(name="local"), events=sink).complete(USER)
    ((kind, data),) = sink.events
    assert kind == "model_call"
    assert (data["unpriced"], data["cached_tokens"], data["model"]) == (True, 6, "local")


def test_a_budget_cannot_be_changed_once_made_and_a_meter_shows_no_lock() -> None:
    budget = Budget(tokens=10)
    with pytest.raises(AttributeError):
        budget.tokens = 10**9  # type: ignore[misc]
    assert budget.tokens == 10
    shown = repr(Meter(budget))
    assert shown.startswith("Meter(budget=Budget(tokens=10, cost_usd=None, seconds=None)")
    assert "_lock" not in shown


HUNG_RUN = """
import time
from harness.core.errors import Stopped
from harness.models.budget import Budget, Meter, MeteredModel
from harness.models.scripted import ScriptedModel

def hang(messages, tools):
    print("called", flush=True)
    time.sleep(60)
    return "too late"

model = ScriptedModel([hang])
hello = [{"role": "user", "content": "hi"}]
model.count_tokens(hello)  # the tokenizer loaded before the budget's clock starts
try:
    MeteredModel(model, Meter(Budget(seconds=0.5))).complete(hello)
except Stopped as stop:
    print(stop.message)
"""


def test_a_hung_model_call_does_not_keep_the_process_alive_once_it_is_cut_off() -> None:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", HUNG_RUN], capture_output=True, text=True, timeout=50, check=False
    )
    assert done.returncode == 0
    assert done.stdout.startswith(
        "called\ntime budget of 0.5s used: a model call was cut off after 0."
    )
    assert time.monotonic() - started < 30  # the process exits without waiting for the call


def test_time_spent_waiting_for_a_person_does_not_count_against_the_time_budget() -> None:
    clock = Clock(100.0)
    meter = Meter(Budget(seconds=30), clock=clock)
    clock.now = 110.0
    with meter.paused():
        clock.now = 500.0  # a person took their time
    assert (meter.waited, meter.elapsed, meter.remaining_seconds()) == (390.0, 10.0, 20.0)
    meter.check(0, 0.0)  # not stopped: only 10 of the 30 seconds are used

    def wait_that_fails() -> None:
        with meter.paused():
            clock.now = 600.0
            raise KeyError("the wait ended badly")

    with pytest.raises(KeyError):
        wait_that_fails()
    assert meter.waited == 490.0  # counted even so
    clock.now = 620.0
    assert meter.elapsed == 30.0
    with pytest.raises(Stopped) as stop:
        meter.check_time()
    assert stop.value.message == "time budget of 30s used (30.0s elapsed)"
