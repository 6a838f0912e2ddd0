"""Token counting: offline, per model family, each message counted once, tool schemas included."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import tiktoken.core

from harness.models.base import ToolCall, token_ceiling
from harness.models.budget import MeteredModel
from harness.models.rate_limit import RateLimitedModel, RateLimiter
from harness.models.scripted import ScriptedModel
from harness.models.tokens import (
    MESSAGE_OVERHEAD,
    TokenCounter,
    _Lru,
    _Tally,
    configure_offline_environment,
    count_text,
    message_text,
)
from harness.tools import Toolbox, default_tools

ROOT = Path(__file__).resolve().parents[2]
MIXED = "Grüße aus München — 東京で会いましょう。Привет, мир! def f(x): return x ** 2"

OFFLINE_COUNT = """
import json, os, socket, sys

def refuse(*args, **kwargs):
    raise OSError("network used")

socket.socket.connect = refuse
socket.create_connection = refuse
from harness.models.tokens import count_text, encoding_name

text = sys.argv[1]
models = ["gpt-3.5-turbo", "my-local-llama", "", "gpt-4o-mini", "openai/gpt-4o"]
print(json.dumps({
    "counts": {m: count_text(text, m) for m in models},
    "encodings": {m: encoding_name(m) for m in models},
    "cache": os.environ.get("TIKTOKEN_CACHE_DIR"),
}))
"""


def test_counting_works_offline_with_both_bundled_encodings(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TIKTOKEN_CACHE_DIR"}
    env.update(TMPDIR=str(tmp_path), HOME=str(tmp_path))  # no old cache
    out = subprocess.run(
        [sys.executable, "-c", OFFLINE_COUNT, MIXED],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    assert found["encodings"] == {
        "gpt-3.5-turbo": "cl100k_base",
        "my-local-llama": "cl100k_base",
        "": "cl100k_base",
        "gpt-4o-mini": "o200k_base",
        "openai/gpt-4o": "o200k_base",
    }
    counts = found["counts"]
    assert counts["gpt-3.5-turbo"] == counts["my-local-llama"] == counts[""] > 0
    assert counts["gpt-4o-mini"] == counts["openai/gpt-4o"] > 0
    assert counts["gpt-4o-mini"] != counts["gpt-3.5-turbo"]
    assert "litellm" in found["cache"]  # the encodings litellm ships, not a download


def test_a_cache_folder_the_user_set_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "/somewhere/of/my/own")
    configure_offline_environment()
    assert os.environ["TIKTOKEN_CACHE_DIR"] == "/somewhere/of/my/own"


def test_empty_text_is_zero_tokens() -> None:
    assert count_text("") == 0
    assert count_text("hello", "gpt-4o") > 0


def test_special_token_text_is_counted_not_refused() -> None:
    assert count_text("<|endoftext|> is just text here") > 0


@pytest.fixture
def encodes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text tiktoken is asked to encode from here on."""
    seen: list[str] = []
    original = tiktoken.core.Encoding.encode

    def encode(self: tiktoken.core.Encoding, text: str, **kwargs: Any) -> list[int]:
        seen.append(text)
        return original(self, text, **kwargs)

    count_text("warm up the encoding")  # loaded before the counting starts
    monkeypatch.setattr(tiktoken.core.Encoding, "encode", encode)
    return seen


def history(n: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are careful."}]
    messages += [{"role": "user", "content": f"step {i}: " + "words " * 50} for i in range(n)]
    return messages


def test_a_list_counted_twice_is_encoded_once(encodes: list[str]) -> None:
    counter = TokenCounter("gpt-4o-mini")
    messages = history(5)
    first = counter.count(messages)
    assert len(encodes) == 6
    assert counter.count(messages) == first
    assert len(encodes) == 6


def test_a_growing_history_encodes_only_the_new_messages(encodes: list[str]) -> None:
    counter = TokenCounter()
    messages = history(3)
    before = counter.count(messages)
    messages.append({"role": "assistant", "content": "I will read the file next."})
    after = counter.count(messages)
    assert len(encodes) == 5
    assert encodes[-1] == "assistant\nI will read the file next."
    assert after - before == count_text("assistant\nI will read the file next.") + MESSAGE_OVERHEAD


def test_a_history_changed_before_its_end_is_counted_afresh() -> None:
    """The shortcut for a grown history must not hide a message replaced, removed or masked."""
    counter = TokenCounter()
    messages = history(4)
    counter.count(messages)
    replaced = [*messages[:2], {"role": "user", "content": "short"}, *messages[3:]]
    assert counter.count(replaced) == TokenCounter().count(replaced)
    assert counter.count(replaced) < counter.count(messages)
    shorter = messages[:3]
    assert counter.count(shorter) == TokenCounter().count(shorter)
    grown = [*messages, {"role": "tool", "tool_call_id": "c1", "content": "out " * 30}]
    assert counter.count(grown) == TokenCounter().count(grown)
    assert counter.count([]) == 0
    assert counter.count(iter(messages)) == TokenCounter().count(messages)


def test_an_equal_copy_is_not_encoded_again_but_a_changed_one_is(encodes: list[str]) -> None:
    counter = TokenCounter()
    original = {"role": "user", "content": "fix the date parser"}
    counted = counter.count_message(original)
    assert counter.count_message(dict(original)) == counted
    assert len(encodes) == 1
    changed = counter.count_message({"role": "user", "content": "fix the date parser today"})
    assert len(encodes) == 2
    assert changed > counted


def test_a_message_costs_its_text_and_a_fixed_overhead() -> None:
    message = {"role": "user", "content": "hello world"}
    assert TokenCounter().count_message(message) == count_text("user\nhello world") + 4


def test_tool_call_arguments_and_multi_part_content_are_counted() -> None:
    counter = TokenCounter()
    arguments = json.dumps({"path": "a.py", "content": "x = 1\n" * 40})
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "write_file", "arguments": arguments},
    }
    bare = counter.count_message({"role": "assistant", "content": None})
    with_call = counter.count_message({"role": "assistant", "content": None, "tool_calls": [call]})
    assert with_call - bare >= count_text(arguments)
    texts = [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}]
    parts = {"role": "user", "content": texts}
    joined = {"role": "user", "content": "first\nsecond"}
    assert counter.count_message(parts) == TokenCounter().count_message(joined)


def test_messages_with_different_text_never_share_a_count() -> None:
    counter = TokenCounter()
    counter.count_message({"role": "assistant", "content": None})
    literal = {"role": "assistant", "content": "null"}
    assert counter.count_message(literal) == TokenCounter().count_message(literal)


def test_tool_schemas_are_counted_and_cached(encodes: list[str]) -> None:
    schemas = Toolbox(default_tools()).schemas()
    counter = TokenCounter("gpt-4o-mini")
    tokens = counter.count_tools(schemas)
    assert tokens == count_text(json.dumps(schemas, sort_keys=True), "gpt-4o-mini") > 100
    calls = len(encodes)
    assert counter.count_tools(schemas) == tokens
    assert len(encodes) == calls
    assert counter.count_tools(None) == counter.count_tools([]) == 0


def test_a_models_prompt_count_includes_the_tool_schemas() -> None:
    schemas = Toolbox(default_tools()).schemas()
    model = ScriptedModel(name="gpt-4o-mini")
    messages = history(2)
    bare = model.count_tokens(messages)
    assert bare == TokenCounter("gpt-4o-mini").count(messages)
    assert model.count_tokens(messages, schemas) == bare + TokenCounter("gpt-4o-mini").count_tools(
        schemas
    )


# --- the ceiling: an upper bound without the tokenizer ----------------------------------------

HARD_TO_COMPRESS = [
    MIXED,
    "🙂🚀👩‍👩‍👧‍👦" * 40,  # several tokens per emoji
    "".join(chr(c) for c in range(0x4E00, 0x4E00 + 300)),  # rare CJK ideographs
    "x7$Qz!" * 50 + "<|endoftext|><|fim_prefix|>",  # special tokens as plain text
    " \t\n" * 100,
    "\udcff lone surrogate",
    "",
]


@pytest.mark.parametrize("model", ["gpt-4o-mini", "gpt-3.5-turbo", "local/llama"])
def test_the_ceiling_is_never_below_the_count(model: str) -> None:
    tools = Toolbox(default_tools()).schemas()
    call = {"id": "c1", "type": "function", "function": {"name": "run_shell", "arguments": "{}"}}
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are careful."}]
    for text in HARD_TO_COMPRESS:
        messages += [
            {"role": "user", "content": text},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": text}]},
        ]
    counter = TokenCounter(model)
    for message in messages:
        assert counter.ceiling([message]) >= counter.count([message]), message
    assert counter.ceiling(messages, tools) >= counter.count_request(messages, tools)


def test_the_ceiling_is_the_utf8_size_plus_the_overhead_and_runs_no_tokenizer(
    encodes: list[str],
) -> None:
    counter = TokenCounter("gpt-4o-mini")
    messages = [
        {"role": "user", "content": "Grüße"},  # 5 characters, 7 bytes
        {"role": "assistant", "content": "东京"},  # 2 characters, 6 bytes
    ]
    # "user\nGrüße" is 12 bytes, "assistant\n东京" 16; each message adds MESSAGE_OVERHEAD.
    assert counter.ceiling(messages) == 12 + 16 + 2 * MESSAGE_OVERHEAD
    assert counter.ceiling([]) == 0
    tools = Toolbox(default_tools()).schemas()
    schemas = len(json.dumps(tools, sort_keys=True).encode())  # the JSON count_tools counts
    assert counter.ceiling(messages, tools) == counter.ceiling(messages) + schemas
    assert counter.ceiling(messages, tools) == counter.ceiling(messages, tools)  # cached
    assert encodes == []  # the schemas too are sized, not tokenised
    assert counter.ceiling(messages, tools) >= counter.count_request(messages, tools)


def test_the_ceiling_of_a_grown_or_changed_history_matches_a_fresh_counter() -> None:
    counter = TokenCounter()
    messages = history(4)
    counter.ceiling(messages)
    grown = [*messages, {"role": "assistant", "content": "next"}]
    assert counter.ceiling(grown) == TokenCounter().ceiling(grown)
    assert counter.ceiling(grown) - counter.ceiling(messages) == len("assistant\nnext") + 4
    replaced = [*messages[:2], {"role": "user", "content": "short"}, *messages[3:]]
    assert counter.ceiling(replaced) == TokenCounter().ceiling(replaced)
    assert counter.ceiling(messages[:3]) == TokenCounter().ceiling(messages[:3])


def test_a_model_without_a_ceiling_is_bounded_by_its_own_count() -> None:
    class Counting:
        name = "plain"
        context_window = 1_000

        def count_tokens(self, messages: list[Any], tools: Any = None) -> int:
            return 7 * len(messages)

    scripted = ScriptedModel([], name="gpt-4o-mini")
    messages = history(2)
    assert token_ceiling(Counting(), messages) == 21  # type: ignore[arg-type]
    assert token_ceiling(scripted, messages) == TokenCounter("gpt-4o-mini").ceiling(messages)
    # A wrapper (the meter, the rate limiter) passes its inner model's ceiling on.
    assert token_ceiling(MeteredModel(Counting()), messages) == 21  # type: ignore[arg-type]
    wrapped = RateLimitedModel(MeteredModel(scripted), RateLimiter(60))
    assert token_ceiling(wrapped, messages) == token_ceiling(scripted, messages)
    assert token_ceiling(wrapped, messages) > scripted.count_tokens(messages)


# --- what is counted, and what is never counted twice ------------------------------------------


def test_empty_text_and_an_empty_reply_run_no_tokenizer(encodes: list[str]) -> None:
    assert count_text("") == 0
    counter = TokenCounter()
    assert counter.count_reply(None) == counter.count_reply("") == 0
    assert encodes == []
    call = ToolCall("read_file", {"path": "a.py"})
    assert counter.count_reply("Reading.", [call]) == count_text("Reading.") + count_text(
        'read_file{"path": "a.py"}'
    )


def test_the_text_of_a_message_holds_its_role_content_calls_and_name() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "grep", "arguments": '{"q": 1}'}}
    message = {"role": "assistant", "content": "Looking.", "tool_calls": [call], "name": "bot"}
    assert message_text(message) == 'assistant\nLooking.\ngrep\n{"q": 1}\nbot'
    assert message_text({"role": "tool", "content": None, "name": ""}) == "tool\n"


def test_equal_content_with_keys_in_another_order_is_encoded_once(encodes: list[str]) -> None:
    counter = TokenCounter()
    part = {"type": "text", "text": "look at this"}
    call = {"id": "c1", "type": "function", "function": {"name": "grep", "arguments": "{}"}}
    first = {"role": "user", "content": [part], "tool_calls": [call]}
    reordered = {
        "role": "user",
        "content": [dict(reversed(part.items()))],
        "tool_calls": [dict(reversed(call.items()))],
    }
    assert counter.count_message(first) == counter.count_message(reordered)
    assert len(encodes) == 1


def test_the_lru_forgets_the_least_recently_used_entry_past_its_size() -> None:
    lru: _Lru[str, int] = _Lru(2)
    lru.put("a", 1)
    lru.put("b", 2)
    assert lru.get("a") == 1  # now "b" is the least recently used
    lru.put("c", 3)
    assert (lru.get("a"), lru.get("b"), lru.get("c")) == (1, None, 3)
    lru.put("a", 4)  # a put refreshes too: "c" goes next
    lru.put("d", 5)
    assert (lru.get("a"), lru.get("c"), lru.get("d")) == (4, None, 5)
    assert lru.get("missing") is None


def test_a_tally_measures_each_message_once_and_looks_only_at_new_ones() -> None:
    measured: list[str] = []

    def measure(message: dict[str, Any]) -> int:
        measured.append(message["content"])
        return len(message["content"])

    tally = _Tally(measure, cache_size=3)
    looked: list[str] = []
    of = tally.of
    tally.of = lambda message: looked.append(message["content"]) or of(message)  # type: ignore[method-assign]
    messages = [{"role": "user", "content": text} for text in ("a", "bb", "ccc")]
    assert tally.total(messages) == 6
    assert tally.total(messages) == 6  # the same list again: nothing looked at
    assert (measured, looked) == (["a", "bb", "ccc"], ["a", "bb", "ccc"])
    assert tally.total(messages[:2]) == 3  # shorter: looked at again, measured from the cache
    assert (measured, looked[3:]) == (["a", "bb", "ccc"], ["a", "bb"])
    grown = [*messages, {"role": "user", "content": "dddd"}]
    looked.clear()
    assert tally.total(messages) == 6  # grown from the last list: only its new message
    assert tally.total(grown) == 10
    assert looked == ["ccc", "dddd"]
    # A list longer than the cache is not remembered: the next total looks at it all.
    looked.clear()
    assert tally.total(grown) == 10
    assert looked == ["a", "bb", "ccc", "dddd"]
    # ... and the cache holds three messages: walking four in order measures each one again.
    assert measured == ["a", "bb", "ccc", "dddd", "a", "bb", "ccc", "dddd"]


def test_tool_schemas_are_serialised_once_per_list_and_encoded_once_per_content(
    encodes: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness.models.tokens as tokens

    dumped: list[int] = []
    dumps = json.dumps
    monkeypatch.setattr(
        tokens.json, "dumps", lambda obj, **kw: dumped.append(1) or dumps(obj, **kw)
    )
    schemas = Toolbox(default_tools()).schemas()
    counter = TokenCounter("gpt-4o-mini")
    tokens_first = counter.count_tools(schemas)
    counter.count_tools(schemas)
    counter.count_tools(list(schemas))  # another list of the very same schema objects
    assert (len(dumped), len(encodes)) == (1, 1)
    copies = json.loads(dumps(schemas))  # equal content, other objects
    assert counter.count_tools(copies) == tokens_first
    assert (len(dumped), len(encodes)) == (2, 1)
