"""A model cascade: rounds start on a cheap model and move up the list after repeated failure.

``[agent] models = ["cheap", "strong"]`` with ``escalate_after = 2``: rounds 1 and 2 run on
``cheap``; had either passed, the run would have stopped there, so round 3 runs on ``strong``,
told which rounds failed on ``cheap`` and how. The last model plays every round after that. The
model of a round follows from its number alone, so a resumed run picks up where it stopped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.agent.config import ESCALATE_AFTER, AgentConfig
from harness.core.errors import ConfigError
from harness.core.section import check_field
from harness.core.usage import Usage
from harness.models.base import Model


@dataclass(frozen=True)
class Cascade:
    """The models rounds climb, cheapest first, and the failed rounds each model gets."""

    models: tuple[Model, ...]
    escalate_after: int = ESCALATE_AFTER

    def __post_init__(self) -> None:
        if not self.models:
            raise ConfigError("models: give at least one model")
        check_field(AgentConfig, "escalate_after", self.escalate_after)

    def rung(self, round_number: int) -> int:
        """The index of the model that plays round ``round_number`` (1-based)."""
        return min((round_number - 1) // self.escalate_after, len(self.models) - 1)

    def first_round(self, rung: int) -> int:
        """The first round model ``rung`` plays."""
        return rung * self.escalate_after + 1


def switch_reason(previous: str, failed: Sequence[tuple[int, str | None]]) -> str:
    """Why the cascade moves on from ``previous``: its failed rounds, each with its outcome
    when this process played it."""
    said = "; ".join(f"round {n} {outcome}" for n, outcome in failed if outcome)
    count = len(failed)
    return f"{count} failed round{'s' if count != 1 else ''} on {previous}" + (
        f" ({said})" if said else ""
    )


def switch_feedback(previous: str, model: str, reason: str) -> str:
    """What the round after a switch is told, before the last round's feedback."""
    return (
        f"The earlier rounds ran on another model ({previous}) and did not pass: {reason}. "
        f"This round runs on {model}: do not repeat what failed.\n\n"
    )


def spent_lines(spent: dict[str, Usage]) -> list[str]:
    """``scripted:cheap: $0.0012 (2,310 tokens) in 4 calls``, one line a model, in order of use."""
    return [
        f"{name}: ${usage.cost_usd:.4f} ({usage.total_tokens:,} tokens) in {usage.calls} calls"
        for name, usage in spent.items()
    ]
