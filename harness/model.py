"""What the rest of the harness sees of a model: messages in, a reply with usage out.

Messages are chat-completions dicts (``{"role": ..., "content": ...}``, assistant tool calls,
``tool`` results). Concrete models live beside this module: :mod:`harness.scripted` (the
deterministic test double) and :mod:`harness.litellm_model` (every real provider).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from harness.errors import ConfigError, HarnessError
from harness.tokens import Message

ToolSchema = dict[str, Any]


class ModelError(HarnessError):
    """A model call failed for good (after the retries its error allowed)."""


def new_call_id() -> str:
    return "call_" + uuid.uuid4().hex[:12]


@dataclass(frozen=True)
class ToolCall:
    """One tool call in a model reply.

    ``arguments`` is a dict, or the raw JSON string the model sent (which may be malformed).
    """

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str = field(default_factory=new_call_id)

    @property
    def arguments_json(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments)

    def to_message_part(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments_json},
        }


@dataclass(frozen=True)
class Usage:
    """Tokens and cost of one or more model calls."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 0
    unpriced_calls: int = 0

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
        )

    def __sub__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens - other.prompt_tokens,
            self.completion_tokens - other.completion_tokens,
            self.cost_usd - other.cost_usd,
            self.calls - other.calls,
            self.unpriced_calls - other.unpriced_calls,
        )


@dataclass(frozen=True)
class Reply:
    """A model's answer: text, tool calls, or both."""

    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)

    def to_message(self) -> Message:
        message: Message = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [call.to_message_part() for call in self.tool_calls]
        return message


@runtime_checkable
class Model(Protocol):
    """Anything that answers chat messages. ``harness`` ships ScriptedModel and LiteLLMModel."""

    name: str

    @property
    def context_window(self) -> int:
        """Input tokens the model accepts."""
        ...

    def complete(
        self,
        messages: list[Message],
        tools: list[ToolSchema] | None = None,
        *,
        max_tokens: int | None = None,
    ) -> Reply: ...

    def count_tokens(self, messages: list[Message], tools: list[ToolSchema] | None = None) -> int:
        """Prompt tokens ``messages`` (and the tool schemas) would cost, counted offline."""
        ...

    def price_per_token(self) -> tuple[float, float]:
        """USD per input token and per output token; ``(0, 0)`` where the model is unpriced."""
        ...


def resolve_model(spec: str | Model, **kwargs: Any) -> Model:
    """A model from a string: ``scripted:PATH`` or any litellm model string.

    ``kwargs`` are litellm options (``api_base``, ``timeout``, ``num_retries``, ...); a scripted
    model takes none and ignores them.
    """
    if not isinstance(spec, str):
        return spec
    if not spec.strip():
        raise ConfigError("model: empty model name")
    if spec.startswith("scripted:"):
        from harness.scripted import ScriptedModel

        return ScriptedModel.from_file(spec.removeprefix("scripted:"))
    from harness.litellm_model import LiteLLMModel

    return LiteLLMModel(spec, **kwargs)


def __getattr__(name: str) -> Any:
    # The concrete models live in their own modules (litellm is imported only when used);
    # ``harness.model`` names them too, as the architecture's map of this layer.
    if name == "ScriptedModel":
        from harness.scripted import ScriptedModel

        return ScriptedModel
    if name == "LiteLLMModel":
        from harness.litellm_model import LiteLLMModel

        return LiteLLMModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
