"""Which models litellm can price, and what that means for a cost budget.

A call is *unpriced* when neither litellm's figure for the response nor its cost map (looked up
with the model name as given) yields a price: a model newer than the installed litellm, a
fine-tune, a gateway alias, a local server. Such a call costs ``0.0`` and is counted in
``Usage.unpriced_calls``; a ``cost_usd`` budget cannot stop it, so a run says so when it starts.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.core.budget import Budget
from harness.models.base import Model


def is_priced(model: Model) -> bool:
    """Whether ``model`` has a price per token (input or output) above zero."""
    return any(price > 0 for price in model.price_per_token())


def cost_budget_warning(budget: Budget, models: Iterable[Model]) -> str | None:
    """A line saying a ``cost_usd`` budget cannot be enforced for the unpriced ``models``."""
    if budget.cost_usd is None:
        return None
    names = list(dict.fromkeys(model.name for model in models if not is_priced(model)))
    if not names:
        return None
    return (
        f"budget.cost_usd (${budget.cost_usd:g}) cannot be enforced for {', '.join(names)}: "
        "no price is known for it, so its calls count as unpriced and cost $0; "
        "set budget.tokens to bound them"
    )
