"""Tokens and cost: what every layer counts, from the model call up to a whole batch."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Usage:
    """Tokens and cost of one or more model calls."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 0
    unpriced_calls: int = 0
    cached_tokens: int = 0
    """Prompt tokens the provider served from its prompt cache (part of ``prompt_tokens``)."""

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cost_usd + other.cost_usd,
            self.calls + other.calls,
            self.unpriced_calls + other.unpriced_calls,
            self.cached_tokens + other.cached_tokens,
        )

    def __sub__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens - other.prompt_tokens,
            self.completion_tokens - other.completion_tokens,
            self.cost_usd - other.cost_usd,
            self.calls - other.calls,
            self.unpriced_calls - other.unpriced_calls,
            self.cached_tokens - other.cached_tokens,
        )
