"""Budgets and the metered model: limits checked before a call, usage recorded after."""

from __future__ import annotations

import math
from typing import Any

import pytest

from harness.core.errors import ConfigError, Stopped
from harness.core.stop import StopReason
from harness.core.usage import Usage
from harness.models.budget import DEFAULT_MAX_TOKENS, Budget, Meter, MeteredModel
from harness.models.scripted import ScriptedModel
from tests.conftest import RecordingSink

USER = [{"role": "user", "content": "Say hello."}]


def test_the_models_own_max_tokens_is_the_limit_checked_and_sent() -> None:
    model = ScriptedModel(["hello", "again"], max_tokens=50)
    prompt = model.count_tokens(USER)
    metered = MeteredModel(model, Meter(Budget(tokens=2 * (prompt + 60))))
    metered.complete(USER)  # the worst case is prompt + 50, not prompt + 4096
    metered.complete(USER, max_tokens=20)
    assert [call.max_tokens for call in model.calls] == [50, 20]


def test_without_a_limit_anywhere_the_harness_default_is_checked_and_sent() -> None:
    model = ScriptedModel(["hello"])
    prompt = model.count_tokens(USER)
    sink = RecordingSink()
    refused = MeteredModel(model, Meter(Budget(tokens=prompt + 100)), events=sink)
    with pytest.raises(Stopped) as stop:
        refused.complete(USER)
    assert stop.value.reason == StopReason.BUDGET_TOKENS
    assert model.calls == []
    ((kind, data),) = sink.events
    assert (kind, data["estimated_tokens"]) == ("budget_check", prompt + DEFAULT_MAX_TOKENS)
    MeteredModel(model).complete(USER)
    assert model.calls[0].max_tokens == DEFAULT_MAX_TOKENS == 4096  # the documented default


def test_an_unknown_role_is_refused_before_any_call() -> None:
    model = ScriptedModel(["never sent"])
    with pytest.raises(ConfigError, match="^role: expected one of author, critic, summariser"):
        MeteredModel(model, role="judge")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="'judge'"):
        MeteredModel(model).for_role("judge")  # type: ignore[arg-type]
    assert model.calls == []


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("field", "value"),
    [("tokens", 0), ("tokens", -5), ("tokens", True), ("tokens", 1.5), ("tokens", math.inf),
     ("cost_usd", 0.0), ("cost_usd", -0.01), ("cost_usd", math.inf), ("cost_usd", math.nan),
     ("seconds", 0), ("seconds", -1.5), ("seconds", False), ("seconds", math.inf),
     ("seconds", math.nan)],
)  # fmt: skip
def test_a_budget_that_is_not_a_positive_finite_number_is_refused(
    field: str, value: object
) -> None:
    with pytest.raises(ConfigError) as error:
        Budget(**{field: value})  # type: ignore[arg-type]
    what = "a positive integer" if field == "tokens" else "a finite number above 0"
    assert str(error.value) == f"budget.{field}: must be {what}, got {value!r}"


def test_the_smallest_positive_budgets_are_accepted() -> None:
    assert Budget(tokens=1, cost_usd=0.0001, seconds=0.5) == Budget(1, 0.0001, 0.5)
    assert Budget() == Budget(None, None, None)


def test_a_call_that_exactly_fits_the_remaining_tokens_goes_ahead_one_more_is_refused() -> None:
    meter = Meter(Budget(tokens=100))
    meter.record(Usage(30, 10))
    meter.check(60, 0.0)  # 40 used + 60 = 100: fits exactly
    with pytest.raises(Stopped) as stop:
        meter.check(61, 0.0)
    assert stop.value.reason is StopReason.BUDGET_TOKENS
    assert stop.value.message == (
        "token budget: 40 used + up to 61 for the next call would exceed 100"
    )


def test_a_call_that_exactly_fits_the_remaining_cost_goes_ahead_one_more_is_refused() -> None:
    meter = Meter(Budget(cost_usd=1.0))
    meter.record(Usage(cost_usd=0.25))
    meter.check(10**9, 0.75)  # 0.25 + 0.75 = 1.0 exactly; no token budget to cross
    with pytest.raises(Stopped) as stop:
        meter.check(0, 0.75 + 2**-20)
    assert stop.value.reason is StopReason.BUDGET_COST
    assert stop.value.message == (
        "cost budget: $0.2500 used + up to $0.7500 for the next call would exceed $1.0000"
    )


def test_the_time_budget_is_used_up_at_its_last_instant_not_after() -> None:
    clock = Clock(100.0)
    meter = Meter(Budget(seconds=30), clock=clock)
    assert meter.started == 100.0
    clock.now = 129.75
    meter.check(0, 0.0)
    meter.check_time()
    clock.now = 130.0
    with pytest.raises(Stopped) as stop:
        meter.check(0, 0.0)
    assert stop.value.reason is StopReason.TIMEOUT
    assert stop.value.message == "time budget of 30s used (30.0s elapsed)"


def test_time_is_checked_first_then_tokens_then_cost() -> None:
    clock = Clock(0.5)
    meter = Meter(Budget(tokens=10, cost_usd=0.01, seconds=1), clock=clock)
    meter.record(Usage(10, 0, 0.01))
    with pytest.raises(Stopped) as stop:
        meter.check(1, 0.01)
    assert stop.value.reason is StopReason.BUDGET_TOKENS
    clock.now = 1.5
    with pytest.raises(Stopped) as stop:
        meter.check(1, 0.01)
    assert stop.value.reason is StopReason.TIMEOUT


def test_checking_spends_nothing_and_recording_adds_up() -> None:
    meter = Meter(Budget(tokens=1000))
    meter.check(900, 0.0)
    assert meter.usage == Usage()
    meter.record(Usage(10, 5, 0.5, calls=1))
    meter.record(Usage(1, 2, 0.25, calls=1))
    assert meter.usage == Usage(11, 7, 0.75, calls=2)


def test_an_explicit_start_is_kept_and_elapsed_counts_from_it() -> None:
    clock = Clock(50.0)
    meter = Meter(clock=clock, started=20.0)
    assert meter.started == 20.0
    assert meter.elapsed == 30.0


def test_describe_remaining_names_what_is_left_of_each_budget_and_never_goes_negative() -> None:
    clock = Clock(10.0)
    meter = Meter(Budget(tokens=500, cost_usd=2.0, seconds=60), clock=clock)
    meter.record(Usage(100, 50, 0.5))
    clock.now = 25.0
    assert meter.describe_remaining() == "350 tokens, $1.5000, 45s"
    meter.record(Usage(400, 0, 2.0))
    clock.now = 100.0
    assert meter.describe_remaining() == "0 tokens, $0.0000, 0s"
    assert Meter(Budget(cost_usd=1.0)).describe_remaining() == "$1.0000"
    assert Meter().describe_remaining() == "no budget limit"


def test_views_for_other_roles_share_the_meter_and_the_budget() -> None:
    author_model = ScriptedModel(["author reply"], name="author-model")
    critic_model = ScriptedModel(["critic reply", "never sent"], name="critic-model")
    long_task = [{"role": "user", "content": "Review this change carefully. " * 10}]
    prompt = author_model.count_tokens(long_task)
    assert prompt > 20
    sink = RecordingSink()
    meter = Meter(Budget(tokens=2 * (prompt + 10)))  # room for two calls, not three
    author = MeteredModel(author_model, meter, events=sink, default_max_tokens=10)
    critic = author.for_role("critic", critic_model)
    summariser = author.for_role("summariser")
    assert (critic.meter, summariser.meter) == (meter, meter)
    assert (critic.role, critic.name, critic.inner) == ("critic", "critic-model", critic_model)
    assert (summariser.inner, summariser.default_max_tokens) == (author_model, 10)
    first = author.complete(long_task)
    second = critic.complete(long_task)
    assert meter.usage == first.usage + second.usage  # the critic's spend is the run's spend
    assert [call.max_tokens for call in critic_model.calls] == [10]
    with pytest.raises(Stopped) as stop:  # and is checked against the same budget
        critic.complete(long_task)
    assert stop.value.reason is StopReason.BUDGET_TOKENS
    assert len(critic_model.calls) == 1
    kinds_and_roles = [(kind, data["role"]) for kind, data in sink.events]
    assert kinds_and_roles == [
        ("model_call", "author"), ("model_call", "critic"), ("budget_check", "critic"),
    ]  # fmt: skip


def test_a_call_is_recorded_in_the_meter_and_reported_as_an_event() -> None:
    model = ScriptedModel(["hello there"], name="m1", cost_per_token=(0.5, 1.0))
    sink = RecordingSink()
    metered = MeteredModel(model, events=sink)
    reply = metered.complete(USER, max_tokens=7)
    assert metered.meter.usage == reply.usage
    assert reply.usage.calls == 1
    ((kind, data),) = sink.events
    assert kind == "model_call"
    latency = data.pop("latency")
    assert 0 <= latency < 5
    assert data == {
        "role": "author",
        "model": "m1",
        "prompt_tokens": reply.usage.prompt_tokens,
        "completion_tokens": reply.usage.completion_tokens,
        "cost_usd": reply.usage.cost_usd,
        "cached_tokens": 0,
        "unpriced": False,
    }


def test_the_worst_case_cost_of_a_call_is_checked_before_it_is_made() -> None:
    model = ScriptedModel(["fits"], cost_per_token=(0.5, 1.0))
    prompt = model.count_tokens(USER)
    worst = prompt * 0.5 + 10 * 1.0
    sink = RecordingSink()
    refused = MeteredModel(model, Meter(Budget(cost_usd=worst - 0.5)), events=sink)
    with pytest.raises(Stopped) as stop:
        refused.complete(USER, max_tokens=10)
    assert stop.value.reason is StopReason.BUDGET_COST
    assert model.calls == []
    ((kind, data),) = sink.events
    assert kind == "budget_check"
    assert data == {
        "role": "author",
        "estimated_tokens": prompt + 10,
        "estimated_cost": worst,
        "reason": stop.value.message,
    }
    MeteredModel(model, Meter(Budget(cost_usd=worst))).complete(USER, max_tokens=10)
    assert len(model.calls) == 1


class CountingModel(ScriptedModel):
    """A scripted model that notes each exact count the meter asks of it."""

    def __init__(self, replies: list[str], **kwargs: Any) -> None:
        super().__init__(replies, **kwargs)
        self.counted = 0

    def count_tokens(self, messages: Any, tools: Any = None) -> int:
        self.counted += 1
        return super().count_tokens(messages, tools)

    def complete(self, messages: Any, tools: Any = None, *, max_tokens: int | None = None) -> Any:
        reply = super().complete(messages, tools, max_tokens=max_tokens)
        self.counted -= 1  # the reply's own usage count is not the meter's
        return reply


def test_the_prompt_is_counted_exactly_only_when_its_ceiling_could_cross_a_budget() -> None:
    prompt = ScriptedModel([]).count_tokens(USER)
    ceiling = ScriptedModel([]).token_ceiling(USER)
    assert ceiling > prompt
    for budget, counted in (
        (Budget(tokens=ceiling + 10), 0),  # the ceiling fits: no count
        (Budget(tokens=prompt + 10), 1),  # only the exact count fits
        (Budget(cost_usd=(ceiling + 10) * 0.5), 0),
        (Budget(cost_usd=(prompt + 10) * 0.5), 1),
    ):
        model = CountingModel(["fits"], cost_per_token=(0.5, 0.5))
        MeteredModel(model, Meter(budget)).complete(USER, max_tokens=10)
        assert (len(model.calls), model.counted) == (1, counted), budget
    model = CountingModel(["no"])
    with pytest.raises(Stopped, match=f"up to {prompt + 11} for the next call"):
        MeteredModel(model, Meter(Budget(tokens=prompt + 10))).complete(USER, max_tokens=11)
    assert (model.calls, model.counted) == ([], 1)


def test_a_call_after_the_time_budget_is_refused_before_it_starts() -> None:
    clock = Clock(100.0)
    model = CountingModel(["too late"])
    sink = RecordingSink()
    metered = MeteredModel(model, Meter(Budget(seconds=30), clock=clock), events=sink)
    clock.now = 130.0
    with pytest.raises(Stopped) as stop:
        metered.complete(USER, max_tokens=10)
    assert stop.value.reason is StopReason.TIMEOUT
    assert stop.value.message == "time budget of 30s used (30.0s elapsed)"
    assert (model.calls, model.counted) == ([], 0)
    assert [kind for kind, _ in sink.events] == ["budget_check"]


def test_the_metered_model_passes_through_what_it_does_not_meter() -> None:
    model = ScriptedModel.per_round(
        {1: ["one"], 2: ["two"]}, name="rounds", context_window=777, cost_per_token=(0.25, 0.5)
    )
    metered = MeteredModel(model)
    assert (metered.name, metered.context_window, metered.price_per_token()) == (
        "rounds", 777, (0.25, 0.5),
    )  # fmt: skip
    assert metered.count_tokens(USER) == model.count_tokens(USER)
    metered.begin_round(2)
    assert metered.complete(USER).content == "two"
    assert metered.meter.budget == Budget()


class NoRounds:
    """A model without ``begin_round``: the metered view must not require one."""

    name = "plain"
    context_window = 1000

    def __init__(self) -> None:
        self.inner = ScriptedModel(["ok"])

    def count_tokens(self, messages: list[Any], tools: list[Any] | None = None) -> int:
        return self.inner.count_tokens(messages, tools)

    def price_per_token(self) -> tuple[float, float]:
        return (0.0, 0.0)

    def complete(self, messages: list[Any], tools: Any = None, *, max_tokens: Any = None) -> Any:
        return self.inner.complete(messages, tools, max_tokens=max_tokens)


def test_a_model_without_rounds_ignores_begin_round() -> None:
    metered = MeteredModel(NoRounds())  # type: ignore[arg-type]
    metered.begin_round(3)
    assert metered.complete(USER).content == "ok"
