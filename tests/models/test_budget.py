"""Budgets and the metered model: limits checked before a call, usage recorded after."""

from __future__ import annotations

from typing import Any

import pytest

from harness.core.errors import ConfigError, Stopped
from harness.core.stop import StopReason
from harness.models.budget import DEFAULT_MAX_TOKENS, Budget, Meter, MeteredModel
from harness.models.scripted import ScriptedModel

USER = [{"role": "user", "content": "Say hello."}]


class RecordingSink:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def emit(self, kind: str, **data: Any) -> None:
        self.events.append((kind, data))


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
    assert model.calls[0].max_tokens == DEFAULT_MAX_TOKENS


def test_an_unknown_role_is_refused_before_any_call() -> None:
    model = ScriptedModel(["never sent"])
    with pytest.raises(ConfigError, match="^role: expected one of author, critic, summariser"):
        MeteredModel(model, role="judge")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="'judge'"):
        MeteredModel(model).for_role("judge")  # type: ignore[arg-type]
    assert model.calls == []
