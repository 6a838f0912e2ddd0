"""What the rest of the harness sees of a model: messages in, a reply with usage out.

Messages are chat-completions dicts (``{"role": ..., "content": ...}``, assistant tool calls,
``tool`` results). Concrete models live beside this module: :mod:`harness.models.scripted` (the
deterministic test double) and :mod:`harness.models.litellm_model` (every real provider).
"""

from __future__ import annotations

import functools
import json
import uuid
from dataclasses import dataclass, field
from typing import Annotated, Any, Protocol, runtime_checkable

from pydantic import Field

from harness.core.errors import ConfigError, HarnessError
from harness.core.usage import Usage
from harness.models.provider_errors import ErrorKind

Message = dict[str, Any]
"""One chat-completions message."""

ToolSchema = dict[str, Any]

ReplyTokens = Annotated[int | None, Field(ge=1, strict=True)]
"""A cap on the tokens of one reply (None: none of its own): the type of every ``max_tokens``
(``[agent]``'s, a model's, the critic's)."""

ContextWindow = Annotated[int | None, Field(ge=1_000, strict=True)]
"""The input tokens a model accepts, where it is given rather than looked up (an unknown or local
model; None: looked up): the type of every ``context_window`` (``[agent]``'s, a model's, a
compaction strategy's)."""


class ModelError(HarnessError):
    """A model call failed for good (after the retries its error allowed).

    ``kind`` names the failure (a :class:`~harness.models.provider_errors.ErrorKind`) where it
    is known.
    """

    def __init__(self, message: str, *, kind: ErrorKind | None = None) -> None:
        super().__init__(message)
        self.kind = kind


class UnknownModelError(ModelError, ConfigError):
    """The provider does not know the model (a 404, "model not found"): bad configuration, found
    only once a call was made. It is a :class:`~harness.core.errors.ConfigError` too, so a run it
    stops ends as bad set-up (the CLI exits 2), not as an internal error."""


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

    @functools.cached_property
    def arguments_json(self) -> str:
        """The arguments as JSON, encoded once: a step asks for them several times (the history,
        the token count, the events, the trajectory)."""
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
class Reply:
    """A model's answer: text, tool calls, or both."""

    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    reasoning: str | None = None  # the model's reasoning, where the provider returns it
    sent: dict[str, Any] | None = None
    """The request's body as it went on the wire, where the model can tell (litellm's: its
    provider's form of the messages and tools); None: the messages as given were sent."""
    truncated: bool = False
    """The reply stopped at its token limit (``max_tokens``), not where the model ended it."""

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


def token_ceiling(
    model: Model, messages: list[Message], tools: list[ToolSchema] | None = None
) -> int:
    """At least ``model.count_tokens(messages, tools)``: the model's cheap upper bound where it
    offers one (a ``token_ceiling`` method, no tokenizer run), else the count itself.

    A check against a limit far above the request (the compaction trigger, a budget) needs no
    exact count; only a ceiling that reaches the limit calls for one.
    """
    ceiling = getattr(model, "token_ceiling", None)
    return ceiling(messages, tools) if callable(ceiling) else model.count_tokens(messages, tools)
