"""Reading and reshaping an agent transcript (a list of chat messages) without a model.

Where a kept tail may start, masking old tool outputs, and one-line descriptions of messages
for records, errors and the summary request.
"""

from __future__ import annotations

import re

from harness.core.text import truncate
from harness.models.base import Message
from harness.models.tokens import content_text

MASK_PREFIX = "[observation masked: "
_OUTCOME = re.compile(r"\[(exit code -?\d+|timed out[^\]\n]*)\]")  # run_shell's first line


def mask_observations(
    messages: list[Message], *, keep: int
) -> tuple[list[Message], tuple[str, ...]]:
    """``messages`` with all but the ``keep`` latest tool outputs masked; what was masked."""
    calls = calls_by_id(messages)
    observations = [i for i, m in enumerate(messages) if m.get("role") == "tool"]
    masked = set(observations[: max(len(observations) - keep, 0)])
    result, dropped = [], []
    for i, message in enumerate(messages):
        content = content_text(message)
        if i in masked and not content.startswith(MASK_PREFIX):
            placeholder = f"{MASK_PREFIX}{_observation(message, calls)}]"
            if len(placeholder) < len(content):
                result.append({**message, "content": placeholder})
                dropped.append(placeholder)
                continue
        result.append(message)
    return result, tuple(dropped)


def tail_start(messages: list[Message], keep: int, *, floor: int = 0) -> int:
    """Where a tail of at least ``keep`` messages starts, never between a call and its results.

    A ``tool`` message belongs to the assistant message whose calls it answers, so the cut moves
    back over tool messages to that assistant message; it never goes below ``floor``.
    """
    cut = max(len(messages) - keep, floor)
    while cut > floor and messages[cut].get("role") == "tool":
        cut -= 1
    return cut


def describe(message: Message, calls: dict[str, tuple[str, str]], *, brief: bool = True) -> str:
    """A one-line description of ``message`` (for records, errors and the summary transcript)."""
    role = str(message.get("role", "?"))
    if role == "tool":
        return f"tool result: {_observation(message, calls)}"
    text = content_text(message)
    line = f"{role}: {text[:60]!r} ({len(text):,} chars)" if brief else role
    for call in message.get("tool_calls") or ():
        function = call.get("function", {})
        line += f" -> {function.get('name')} {truncate(str(function.get('arguments')), 120)}"
    return line


def _observation(message: Message, calls: dict[str, tuple[str, str]]) -> str:
    """``run_shell {"command": "pytest -q"} → exit code 1, 48,213 chars``."""
    content = content_text(message)
    name, arguments = calls.get(str(message.get("tool_call_id")), ("unknown tool", ""))
    found = _OUTCOME.match(content)
    outcome = f"{found.group(1)}, " if found else ""
    call = f"{name} {truncate(arguments, 120)}" if arguments else name
    return f"{call} → {outcome}{len(content):,} chars"


def calls_by_id(messages: list[Message]) -> dict[str, tuple[str, str]]:
    calls = {}
    for message in messages:
        for call in message.get("tool_calls") or ():
            function = call.get("function", {})
            calls[str(call.get("id"))] = (
                str(function.get("name")),
                str(function.get("arguments", "")),
            )
    return calls


def system_prefix(messages: list[Message]) -> int:
    head = 0
    while head < len(messages) and messages[head].get("role") == "system":
        head += 1
    return head
