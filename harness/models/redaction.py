"""Secrets kept out of every request to a model, each message redacted once.

A :class:`~harness.models.budget.MeteredModel` — the wrapper every model call of the harness goes
through (author, critic, summariser, planner, synthesiser) — passes each request's messages
through a :class:`RequestRedactor` before they are counted or sent: the system prompt, the task
(with the progress summary and last round's failures), tool observations, diffs, and the
model's own replies and tool-call arguments when they are echoed back; and the request's tool
schemas (an external agent's, sent on through the gateway, are its own text).

Redaction is paid once per message, not once per request: a message object seen in an earlier
request (with the same fields) is looked up by identity, so a long history costs a dictionary
lookup per message per step; a history decoded anew for each request (an external agent's,
through the gateway) has its texts and tool calls' arguments looked up by their text. An unchanged message is passed on as the very same object, so the
token counter's own identity caches keep working.
"""

from __future__ import annotations

import copy
import functools
import operator
from collections.abc import Callable
from typing import Any

from harness.core.redact import REMEMBERED_CHARS, redact_json_text, redact_strings
from harness.core.text_memo import TextMemo
from harness.models.base import Message, ToolSchema

_FIELD_NAMES = frozenset(
    ("role", "content", "tool_calls", "tool_call_id", "name", "id", "type", "function",
     "arguments", "text", "image_url", "url", "cache_control", "thinking_blocks", "thinking",
     "signature", "reasoning_content")
)  # fmt: skip
"""The names of a chat message's fields, which hold no secret: not looked up."""

Redact = Callable[[str], str]
"""Text in, the same text with secrets replaced (e.g. :meth:`Redactor.redact_text`)."""


class RequestRedactor:
    """Redacts the text a model would read in a list of chat messages.

    Redacted: every string a message holds, at any depth (``content`` and its parts, names, ids,
    an image's URL, thinking blocks: an external agent's request may put anything in any
    field), and each tool call's ``arguments`` (the strings inside the JSON, keys too, which is
    then written again; a malformed arguments string is redacted as text).
    Only the messages of the latest request are remembered, so the cache never outgrows the
    history it serves.
    """

    def __init__(self, redact: Redact) -> None:
        self._redact = redact
        # id -> (message, its values when redacted, redacted message); holding the message
        # keeps its id from being reused while the entry lives.
        self._seen: dict[int, tuple[Message, tuple[Any, ...], Message]] = {}
        # the latest tool schemas (a copy of its own: a caller may change its list), and them
        # redacted (None: nothing was)
        self._tools: tuple[list[ToolSchema] | None, list[ToolSchema] | None] = (None, None)
        # tool calls' arguments by their text: a history decoded anew for each request (the
        # gateway's) holds the same texts, which are not parsed again
        self._arguments = TextMemo(functools.partial(redact_json_text, redact=redact),
                                   REMEMBERED_CHARS)  # fmt: skip

    def redact(self, messages: list[Message]) -> list[Message]:
        """``messages`` as they may be sent: each one redacted, or itself where nothing was."""
        seen: dict[int, tuple[Message, tuple[Any, ...], Message]] = {}
        out = []
        for message in messages:
            hit = self._seen.get(id(message))
            values = tuple(message.values())
            if (
                hit is None
                or hit[0] is not message
                or len(hit[1]) != len(values)
                or not all(map(operator.is_, hit[1], values))
            ):
                hit = (message, values, self._message(message))
            seen[id(message)] = hit
            out.append(hit[2])
        self._seen = seen
        return out

    def tools(self, tools: list[ToolSchema] | None) -> list[ToolSchema] | None:
        """``tools`` as they may be sent: every string in them (names and keys too) redacted.
        The same schemas as the request before (equal to them, compared without encoding: a
        session sends its tools with every request) are not walked again, and the same list
        is sent for them each time, so what is kept by identity downstream (their size and
        token count, the trajectory's copy) holds for requests that make their list anew, as
        the gateway's do."""
        if not tools:
            return tools
        if tools != self._tools[0]:
            redacted = redact_strings(tools, self._redact)
            self._tools = copy.deepcopy(tools), None if redacted == tools else redacted
        return self._tools[1] or self._tools[0]

    def _message(self, message: Message) -> Message:
        calls = message.get("tool_calls")
        if not isinstance(calls, list):
            return self._fields(message)
        said = self._fields(message, keep="tool_calls")
        redacted = [self._call(call) for call in calls]
        if all(map(operator.is_, redacted, calls)):
            return said
        return {**said, "tool_calls": redacted}

    def _value(self, value: Any) -> Any:
        """``value`` with every string in it redacted (keys too); itself where none was."""
        if isinstance(value, str):
            text = self._redact(value)
            return value if text == value else text
        if isinstance(value, dict):
            return self._fields(value)
        if isinstance(value, list):
            items = [self._value(item) for item in value]
            return value if all(map(operator.is_, items, value)) else items
        return value

    def _fields(self, fields: dict[str, Any], keep: str = "") -> dict[str, Any]:
        """``fields`` with its keys and every value but ``keep``'s redacted; itself where none
        was. The names chat messages use are not looked up."""
        said: dict[str, Any] = {}
        changed = False
        for key, value in fields.items():
            name = key if key in _FIELD_NAMES else self._value(key)
            redacted = value if key == keep or value is None else self._value(value)
            changed = changed or name is not key or redacted is not value
            said[name] = redacted
        return said if changed else fields

    def _call(self, call: Any) -> Any:
        """A tool call: its arguments redacted by their text (a JSON text), the rest as values."""
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("arguments"), str):
            return self._value(call)
        said = self._fields(call, keep="function")
        spelled = self._fields(function, keep="arguments")
        arguments = self._arguments.of(function["arguments"])
        if said is call and spelled is function and arguments == function["arguments"]:
            return call
        return {**said, "function": {**spelled, "arguments": arguments}}
