"""A deterministic model for tests and offline demos."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.core.errors import ConfigError, ScriptExhausted
from harness.core.section import check_value
from harness.core.usage import Usage
from harness.core.validation import json_lines, read_utf8
from harness.models.base import Message, Reply, ReplyTokens, ToolCall, ToolSchema
from harness.models.tokens import CountsTokens, TokenCounter

ReplySpec = str | ToolCall | Sequence[ToolCall] | Reply
ScriptEntry = ReplySpec | Callable[[list[Message], list[ToolSchema]], ReplySpec]


class ModelRequest:
    """One request a ScriptedModel received: :attr:`messages`, :attr:`tools`, :attr:`max_tokens`.

    The requests of a session share the messages they have in common: a recorded request keeps
    the one before it, how many of its first messages it repeats, and copies of the messages it
    adds. Recording a session therefore costs memory in proportion to its new messages, not to
    its length times its steps; :attr:`messages` is put together when read.
    """

    __slots__ = ("_added", "_previous", "_shared", "max_tokens", "tools")

    def __init__(
        self,
        messages: Sequence[Message],
        tools: list[ToolSchema],
        max_tokens: int | None = None,
        *,
        previous: ModelRequest | None = None,
        shared: int = 0,
    ) -> None:
        """The request made of ``previous``'s first ``shared`` messages, then ``messages``."""
        self._previous = previous
        self._shared = shared
        self._added = tuple(messages)
        self.tools = tools
        self.max_tokens = max_tokens

    @property
    def messages(self) -> list[Message]:
        """The messages as they were when the request was made (a new list on every read)."""
        pieces, need, node = [self._added], self._shared, self._previous
        while need:  # the first ``need`` messages of ``node`` are still to be collected
            assert node is not None
            if need > node._shared:
                pieces.append(node._added[: need - node._shared])
                need = node._shared
            node = node._previous
        return [message for piece in reversed(pieces) for message in piece]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ModelRequest):
            return NotImplemented
        return (self.messages, self.tools, self.max_tokens) == (
            other.messages,
            other.tools,
            other.max_tokens,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"ModelRequest(messages={self.messages!r}, tools={self.tools!r}, "
            f"max_tokens={self.max_tokens!r})"
        )


class ScriptedModel(CountsTokens):
    """Replies from a script, one entry per call.

    An entry is a final answer (``str``), a :class:`ToolCall` or a list of them, a
    :class:`Reply`, or a callable ``(messages, tools) -> entry``. Every request is recorded in
    :attr:`calls`; usage is counted with the tokenizer so budgets behave as with a real model.
    ``max_tokens`` is the completion limit recorded for a call made without one.

    ``rounds`` scripts (``ScriptedModel.per_round({1: [...], 2: [...]})``) pick their replies by
    the outer loop's round number, so a resumed run gets the same replies as an uninterrupted one.
    """

    def __init__(
        self,
        script: Sequence[ScriptEntry] = (),
        *,
        name: str = "scripted",
        context_window: int = 128_000,
        cost_per_token: tuple[float, float] = (0.0, 0.0),
        rounds: Mapping[int, Sequence[ScriptEntry]] | None = None,
        max_tokens: int | None = None,
    ) -> None:
        check_value(ReplyTokens, max_tokens, "max_tokens")
        self.name = name
        self.max_tokens = max_tokens
        self.context_window = context_window
        self._price = cost_per_token
        self._rounds = {int(k): list(v) for k, v in (rounds or {}).items()}
        self._script: list[ScriptEntry] = list(script)
        self._cursor = 0
        self._lock = threading.Lock()
        self._counter = TokenCounter(name)
        self.calls: list[ModelRequest] = []
        self._last: list[Message] = []  # the messages of the last request, as recorded

    @classmethod
    def per_round(cls, rounds: Mapping[int, Sequence[ScriptEntry]], **kwargs: Any) -> ScriptedModel:
        return cls(rounds=rounds, **kwargs)

    @classmethod
    def from_file(cls, path: str | Path, **kwargs: Any) -> ScriptedModel:
        """Load a script from a file.

        A ``.jsonl`` file holds one entry per non-empty line. Any other file is JSON: a list of
        entries, or ``{"rounds": {"1": [...], "2": [...]}}`` for a rounds script, which may add
        ``"cost_per_token": [input, output]`` (dollars) for its calls to cost something.
        """
        path = Path(path)
        text = read_utf8(path, "script")
        kwargs = {"name": f"scripted:{path.name}", **kwargs}
        if path.suffix.lower() == ".jsonl":
            return cls([_entry_from_json(d, w) for w, d in json_lines(path, text)], **kwargs)
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}"
            ) from exc
        if isinstance(data, list):
            return cls(
                [_entry_from_json(e, f"{path}: entry {i + 1}") for i, e in enumerate(data)],
                **kwargs,
            )
        if isinstance(data, dict) and "rounds" in data:
            if "cost_per_token" in data:
                kwargs["cost_per_token"] = _price_from_json(data["cost_per_token"], path)
            return cls(rounds=_rounds_from_json(data["rounds"], path), **kwargs)
        raise ConfigError(
            f'{path}: expected a list of replies or {{"rounds": {{...}}}}, found {_kind(data)}'
        )

    def price_per_token(self) -> tuple[float, float]:
        return self._price

    def begin_round(self, round_number: int) -> None:
        """Switch to the replies of ``round_number`` (only for ``rounds`` scripts)."""
        if not self._rounds:
            return
        if round_number not in self._rounds:
            raise ScriptExhausted(
                f"{self.name}: the script has no replies for round {round_number}"
            )
        with self._lock:
            self._script = list(self._rounds[round_number])
            self._cursor = 0

    @property
    def remaining(self) -> int:
        return len(self._script) - self._cursor

    def complete(
        self,
        messages: list[Message],
        tools: list[ToolSchema] | None = None,
        *,
        max_tokens: int | None = None,
    ) -> Reply:
        limit = max_tokens if max_tokens is not None else self.max_tokens
        with self._lock:
            self.calls.append(self._record(messages, list(tools or []), limit))
            if self._cursor >= len(self._script):
                raise ScriptExhausted(
                    f"{self.name}: script exhausted: it holds {len(self._script)} replies "
                    f"and call {self._cursor + 1} was made"
                )
            entry = self._script[self._cursor]
            self._cursor += 1
        if callable(entry) and not isinstance(entry, ToolCall):
            entry = entry(messages, list(tools or []))
        reply = _to_reply(entry)
        completion = self._counter.count_reply(reply.content, reply.tool_calls)
        prompt = self.count_tokens(messages, tools)
        price_in, price_out = self._price
        usage = Usage(prompt, completion, prompt * price_in + completion * price_out, calls=1)
        return dataclasses.replace(reply, usage=usage)  # as scripted, with its usage counted

    def _record(
        self, messages: list[Message], tools: list[ToolSchema], limit: int | None
    ) -> ModelRequest:
        """The request, sharing with the last one the messages both begin with (equal to what
        was recorded then: a message changed since is copied again)."""
        last, shared = self._last, 0
        end = min(len(last), len(messages))
        while shared < end and last[shared] == messages[shared]:
            shared += 1
        added = tuple(dict(m) for m in messages[shared:])
        previous = self.calls[-1] if self.calls else None
        self._last = [*last[:shared], *added]
        return ModelRequest(added, tools, limit, previous=previous, shared=shared)


def _to_reply(entry: object) -> Reply:
    if isinstance(entry, Reply):
        return entry
    if isinstance(entry, str):
        return Reply(content=entry)
    if isinstance(entry, ToolCall):
        return Reply(content=None, tool_calls=(entry,))
    if isinstance(entry, Sequence) and all(isinstance(c, ToolCall) for c in entry):
        return Reply(content=None, tool_calls=tuple(entry))
    raise TypeError(
        f"a script entry must be str, ToolCall, list of ToolCall or Reply, not {entry!r}"
    )


def _rounds_from_json(rounds: Any, path: Path) -> dict[int, list[ScriptEntry]]:
    if not isinstance(rounds, dict):
        raise ConfigError(
            f'{path}: "rounds" must be an object of round lists, found {_kind(rounds)}'
        )
    parsed: dict[int, list[ScriptEntry]] = {}
    for key, entries in rounds.items():
        if not key.isdigit() or not isinstance(entries, list):
            raise ConfigError(f"{path}: rounds.{key}: expected a round number and a list")
        parsed[int(key)] = [
            _entry_from_json(e, f"{path}: rounds.{key}[{i}]") for i, e in enumerate(entries)
        ]
    return parsed


def _price_from_json(price: Any, path: Path) -> tuple[float, float]:
    """``"cost_per_token": [input, output]``: dollars a token, neither negative."""
    fits = isinstance(price, list) and len(price) == 2
    if not fits or not all(isinstance(p, int | float) and p >= 0 for p in price):
        raise ConfigError(f"{path}: cost_per_token: expected [input, output] dollars a token, "
                          f"neither negative, found {json.dumps(price)}")  # fmt: skip
    return float(price[0]), float(price[1])


def _kind(data: Any) -> str:
    """What a JSON value is, for an error message."""
    kinds: dict[type, str] = {
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        list: "a list",
        dict: 'an object without "rounds"',
    }
    return "null" if data is None else kinds.get(type(data), type(data).__name__)


def _call_from_json(data: Any, where: str) -> ToolCall:
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        raise ConfigError(f'{where}: a tool call needs "name" and "arguments"')
    arguments = data.get("arguments", {})
    if not isinstance(arguments, dict | str):
        raise ConfigError(f"{where}: arguments must be an object or a JSON string")
    return ToolCall(data["name"], arguments)


def _entry_from_json(data: Any, where: str) -> ReplySpec:
    """``"text"``, ``{"name", "arguments"}``, or ``{"content", "tool_calls": [...]}``."""
    if isinstance(data, str):
        return data
    if isinstance(data, dict) and "name" in data:
        return _call_from_json(data, where)
    if isinstance(data, dict) and ("tool_calls" in data or "content" in data):
        calls = data.get("tool_calls") or []
        if not isinstance(calls, list):
            raise ConfigError(f"{where}: tool_calls must be a list")
        parsed = tuple(_call_from_json(c, f"{where}.tool_calls[{i}]") for i, c in enumerate(calls))
        content = data.get("content")
        if content is not None and not isinstance(content, str):
            content = json.dumps(content)
        return Reply(content=content, tool_calls=parsed)
    raise ConfigError(
        f'{where}: expected a string, {{"name", "arguments"}} or {{"content", "tool_calls"}}'
    )
