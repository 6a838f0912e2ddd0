"""What was said in one model call, as a ``model_call`` event carries it to the trajectory."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic_core import CoreSchema, core_schema

from harness.core.usage import Usage


class SaidCall(Protocol):
    """A reply's tool call, as the trajectory reads it (a :class:`~harness.models.base.ToolCall`)."""

    @property
    def id(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def arguments_json(self) -> str:
        """The arguments as the model sent them (may be malformed JSON)."""
        ...


class SaidReply(Protocol):
    """A model's reply, as the trajectory reads it (a :class:`~harness.models.base.Reply`)."""

    @property
    def content(self) -> str | None: ...

    @property
    def tool_calls(self) -> Sequence[SaidCall]: ...

    @property
    def reasoning(self) -> str | None: ...

    @property
    def truncated(self) -> bool:
        """Whether the reply was cut at its token limit."""
        ...

    @property
    def usage(self) -> Usage: ...

    @property
    def sent(self) -> dict[str, Any] | None:
        """The request's body as it went on the wire, where the model reported it."""
        ...


@dataclass(slots=True)
class Exchange:
    """What was said in a model call, as the trajectory records it: the request as sent (its
    ``messages``, after redaction, and tool schemas) and the ``reply`` itself.

    Never validated nor copied: the messages are the very objects sent, which the trajectory
    compares by identity first. Not frozen either: one is made at every model call, recorded or
    not, and a frozen dataclass takes five times as long to make."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    max_tokens: int | None
    reply: SaidReply

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> CoreSchema:
        """Carried by an event as it is: never validated, never written to the event log."""
        return core_schema.any_schema()
