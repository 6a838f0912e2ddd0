"""Which models count as priced, and the warning a cost budget gives for the others (no litellm)."""

from __future__ import annotations

import pytest

from harness.models.budget import Budget
from harness.models.pricing import cost_budget_warning, is_priced
from harness.models.scripted import ScriptedModel


@pytest.mark.parametrize(
    ("prices", "priced"),
    [((0.0, 0.0), False), ((1e-9, 0.0), True), ((0.0, 1e-9), True), ((3e-6, 15e-6), True),
     ((-1e-6, 0.0), False)],
)  # fmt: skip
def test_a_model_is_priced_when_either_price_is_above_zero(
    prices: tuple[float, float], priced: bool
) -> None:
    assert is_priced(ScriptedModel(cost_per_token=prices)) is priced


def test_the_warning_names_each_unpriced_model_once_in_order_and_no_priced_one() -> None:
    models = [
        ScriptedModel(name="local-b"), ScriptedModel(name="paid", cost_per_token=(1e-6, 2e-6)),
        ScriptedModel(name="local-a"), ScriptedModel(name="local-b"),
    ]  # fmt: skip
    assert cost_budget_warning(Budget(cost_usd=2.5), models) == (
        "budget.cost_usd ($2.5) cannot be enforced for local-b, local-a: no price is known for "
        "it, so its calls count as unpriced and cost $0; set budget.tokens to bound them"
    )


def test_no_warning_without_a_cost_budget_or_without_an_unpriced_model() -> None:
    free = ScriptedModel(name="local")
    assert cost_budget_warning(Budget(tokens=100, seconds=5), [free]) is None
    assert (
        cost_budget_warning(Budget(cost_usd=1.0), [ScriptedModel(cost_per_token=(0, 1e-6))]) is None
    )
    assert cost_budget_warning(Budget(cost_usd=1.0), []) is None
