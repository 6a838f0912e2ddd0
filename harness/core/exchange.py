"""What was said in one model call, as a ``model_call`` event carries it to the trajectory."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.core.usage import Usage

ReplyCall = tuple[str, str, str]
"""A reply's tool call: its id, its name, and its arguments as the model sent them."""


@dataclass(frozen=True, slots=True)
class Exchange:
    """What was said in a model call, as the trajectory records it: the request as sent (its
    ``messages`` and tool schemas, and the whole body on the wire where the model reported it
    as ``sent``) and the reply (its text, its tool calls, its reasoning). Not validated: the
    messages are the very objects sent, which the trajectory compares by identity first."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    max_tokens: int | None
    reply: str | None
    calls: Sequence[ReplyCall]
    reasoning: str | None
    usage: Usage
    sent: dict[str, Any] | None = None
