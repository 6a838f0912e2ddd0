"""Tokens and cost: what every layer counts, from the model call up to a whole batch."""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any


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
        return self._combine(other, operator.add)

    def __sub__(self, other: Usage) -> Usage:
        return self._combine(other, operator.sub)

    def _combine(self, other: Usage, op: Callable[[Any, Any], Any]) -> Usage:
        """Field by field: ``op`` of this usage's and ``other``'s."""
        return Usage(*(op(getattr(self, f.name), getattr(other, f.name)) for f in fields(self)))
