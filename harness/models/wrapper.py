"""A model that wraps another: everything but ``complete`` is the wrapped model's."""

from __future__ import annotations

from harness.models.base import Message, Model, ToolSchema, token_ceiling


class Wrapper:
    """Forwards what a wrapper does not change to :attr:`inner`."""

    inner: Model

    @property
    def context_window(self) -> int:
        return self.inner.context_window

    def count_tokens(self, messages: list[Message], tools: list[ToolSchema] | None = None) -> int:
        return self.inner.count_tokens(messages, tools)

    def token_ceiling(self, messages: list[Message], tools: list[ToolSchema] | None = None) -> int:
        return token_ceiling(self.inner, messages, tools)

    def price_per_token(self) -> tuple[float, float]:
        return self.inner.price_per_token()

    def begin_round(self, round_number: int) -> None:
        begin = getattr(self.inner, "begin_round", None)
        if begin is not None:
            begin(round_number)
