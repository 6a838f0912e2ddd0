"""Offline token counting.

tiktoken downloads its encodings on first use, which fails without a network. litellm ships
``cl100k_base`` and ``o200k_base`` in its package; we point ``TIKTOKEN_CACHE_DIR`` there (found
with ``importlib.util.find_spec``, so litellm is not imported) unless the user already set it.

Models whose tokenizer tiktoken does not know are counted with ``cl100k_base``: close enough for
budgets and compaction triggers, and documented as an estimate.
"""

from __future__ import annotations

import importlib.util
import json
import operator
import os
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from functools import cache, lru_cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from harness.models.base import Message, ToolCall, ToolSchema

if TYPE_CHECKING:
    import tiktoken


MESSAGE_OVERHEAD = 4
"""Tokens a chat message costs beyond its content (role and separators), as OpenAI counts them."""

CACHE_SIZE = 4_096
"""Counts a :class:`TokenCounter` keeps, per cache: far more than a session's live messages."""

_O200K_PREFIXES = ("gpt-4o", "gpt-4.1", "gpt-5", "o1", "o3", "o4", "chatgpt-4o")


def configure_offline_environment() -> None:
    """Point tiktoken at litellm's bundled encodings and keep litellm's cost map local."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        return
    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        return
    folder = Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"
    if folder.is_dir():
        os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)


def encoding_name(model: str) -> str:
    """The tiktoken encoding used to count tokens for ``model`` (a litellm model string)."""
    leaf = model.rsplit("/", 1)[-1].lower()
    return "o200k_base" if leaf.startswith(_O200K_PREFIXES) else "cl100k_base"


@cache
def encoding(name: str) -> tiktoken.Encoding:
    configure_offline_environment()
    import tiktoken

    return tiktoken.get_encoding(name)


def count_text(text: str, model: str = "") -> int:
    """Tokens in ``text`` under ``model``'s encoding."""
    if not text:
        return 0
    return len(encoding(encoding_name(model)).encode(text, disallowed_special=()))


def content_text(message: Message) -> str:
    """A message's content as text (the text parts of a multi-part content joined)."""
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def message_text(message: Message) -> str:
    """Everything in a chat message that the model reads, as one string."""
    parts = [str(message.get("role", "")), content_text(message)]
    for call in message.get("tool_calls") or ():
        function = call.get("function", {})
        parts.append(str(function.get("name", "")))
        parts.append(str(function.get("arguments", "")))
    if message.get("name"):
        parts.append(str(message["name"]))
    return "\n".join(parts)


def _cache_key(message: Message) -> tuple[Any, ...]:
    # Strings cache their hash and compare by identity first, so a hit on a long message that is
    # the same object costs O(1); only small parts are serialised.
    content = message.get("content")
    # Text and serialised structures are tagged apart: content None must not share a key with
    # the text "null", nor a list with the string of its JSON.
    text = (
        ("text", content)
        if isinstance(content, str)
        else ("json", json.dumps(content, sort_keys=True, default=str))
    )
    calls = message.get("tool_calls")
    return (
        message.get("role"),
        text,
        message.get("name"),
        json.dumps(calls, sort_keys=True, default=str) if calls else None,
    )


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class _Lru(Generic[K, V]):
    """A mapping that forgets its least recently used entry past ``size`` entries."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        if len(self._items) > self.size:
            self._items.popitem(last=False)


class _Tally:
    """The sum of a per-message figure over a list of messages, each message measured once.

    A second look at the same message object costs a dictionary lookup; a list that starts with
    the very message objects summed last (a session's history, grown by appends) costs only a
    look at its new messages. At most ``cache_size`` messages are held.
    """

    def __init__(self, measure: Callable[[Message], int], cache_size: int) -> None:
        self._measure = measure
        # id -> (message, figure); holding the message keeps its id from being reused.
        self._by_identity: _Lru[int, tuple[Message, int]] = _Lru(cache_size)
        self._last: tuple[tuple[Message, ...], int] = ((), 0)  # the list summed last, its sum
        self._cache_size = cache_size

    def of(self, message: Message) -> int:
        hit = self._by_identity.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        figure = self._measure(message)
        self._by_identity.put(id(message), (message, figure))
        return figure

    def total(self, messages: Iterable[Message]) -> int:
        items = tuple(messages)
        known, total = self._last
        if known and len(items) >= len(known) and all(map(operator.is_, known, items)):
            total += sum(map(self.of, items[len(known) :]))
        else:
            total = sum(map(self.of, items))
        # A history longer than the caches is not kept: a tally holds at most cache_size messages.
        self._last = (items, total) if len(items) <= self._cache_size else ((), 0)
        return total


def byte_ceiling(message: Message) -> int:
    """An upper bound of a message's tokens that needs no tokenizer: its text's UTF-8 bytes.

    Every token of a byte-level BPE (all tiktoken encodings) stands for at least one byte.
    """
    return len(message_text(message).encode("utf-8", "surrogatepass")) + MESSAGE_OVERHEAD


class TokenCounter:
    """Counts chat messages, each distinct message once.

    Counts are cached by message content, so recounting a growing history costs only the new
    messages: a 100k-token transcript is tokenised once, not once per step. A second cache by
    identity makes recounting the same message objects cheaper still (no key to build). Each
    cache keeps the ``cache_size`` most recently used counts, so a long session's dropped
    messages are released.

    :meth:`ceiling` bounds a request from above without the tokenizer; callers that only compare
    a count with a limit far above it (the compaction trigger, a budget) need no exact count.
    """

    def __init__(self, model: str = "", *, cache_size: int = CACHE_SIZE) -> None:
        self.model = model
        self._by_content: _Lru[tuple[Any, ...], int] = _Lru(cache_size)
        self._exact = _Tally(self._tokenise, cache_size)
        self._bytes = _Tally(byte_ceiling, cache_size)
        self._count_schemas = lru_cache(cache_size)(partial(count_text, model=model))
        # schema objects' ids -> (the schemas, their JSON, its UTF-8 size)
        self._tools_by_identity: _Lru[tuple[int, ...], tuple[list[dict[str, Any]], str, int]]
        self._tools_by_identity = _Lru(cache_size)

    def _tokenise(self, message: Message) -> int:
        key = _cache_key(message)
        count = self._by_content.get(key)
        if count is None:
            count = count_text(message_text(message), self.model) + MESSAGE_OVERHEAD
            self._by_content.put(key, count)
        return count

    def count_message(self, message: Message) -> int:
        """Tokens of one message. Messages are treated as immutable once counted."""
        return self._exact.of(message)

    def count(self, messages: Iterable[Message]) -> int:
        """Tokens of ``messages``. A list that starts with the very message objects counted last
        (a session's history, grown by appends) costs only a look at its new messages: the
        compaction check and the budget check of one step count the history once."""
        return self._exact.total(messages)

    def ceiling(
        self, messages: Iterable[Message], tools: Iterable[dict[str, Any]] | None = None
    ) -> int:
        """At least :meth:`count_request` of the same request, at the cost of a byte count (the
        tool schemas' too: no tokenizer run)."""
        return self._bytes.total(messages) + self._schemas(tools)[1]

    def count_tools(self, tools: Iterable[dict[str, Any]] | None) -> int:
        """Tokens of the tool schemas; the same schema objects again cost no serialisation."""
        text = self._schemas(tools)[0]
        return self._count_schemas(text) if text else 0

    def _schemas(self, tools: Iterable[dict[str, Any]] | None) -> tuple[str, int]:
        """The tool schemas as the JSON counted, and its UTF-8 size; the same schema objects
        again cost no serialisation."""
        if not tools:
            return "", 0
        schemas = list(tools)
        ids = tuple(map(id, schemas))
        hit = self._tools_by_identity.get(ids)
        if hit is not None and all(a is b for a, b in zip(hit[0], schemas, strict=True)):
            return hit[1], hit[2]
        text = json.dumps(schemas, sort_keys=True)
        size = len(text.encode("utf-8", "surrogatepass"))
        self._tools_by_identity.put(ids, (schemas, text, size))
        return text, size

    def count_request(
        self, messages: Iterable[Message], tools: Iterable[dict[str, Any]] | None = None
    ) -> int:
        """Prompt tokens of a request: its messages and its tool schemas."""
        return self.count(messages) + self.count_tools(tools)

    def count_reply(self, content: str | None, tool_calls: Iterable[ToolCall] = ()) -> int:
        """Completion tokens of a reply: its text and each tool call's name and arguments."""
        return count_text(content or "", self.model) + sum(
            count_text(call.name + call.arguments_json, self.model) for call in tool_calls
        )


class CountsTokens:
    """A model's offline counts, from its :class:`TokenCounter` (``_counter``)."""

    _counter: TokenCounter

    def count_tokens(self, messages: list[Message], tools: list[ToolSchema] | None = None) -> int:
        return self._counter.count_request(messages, tools)

    def token_ceiling(self, messages: list[Message], tools: list[ToolSchema] | None = None) -> int:
        """At least :meth:`count_tokens`, from the request's UTF-8 size: no tokenizer run."""
        return self._counter.ceiling(messages, tools)
