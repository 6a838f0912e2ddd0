"""ScriptedModel: scripts from code, JSON and JSON Lines files, rounds, usage and requests."""

from __future__ import annotations

import gc
import json
import weakref
from pathlib import Path
from typing import Any

import pytest

from harness.core.errors import ConfigError, ScriptExhausted
from harness.models.base import Reply, ToolCall
from harness.models.scripted import ModelRequest, ScriptedModel
from harness.models.tokens import CACHE_SIZE, MESSAGE_OVERHEAD, encoding

USER = [{"role": "user", "content": "List the files, please."}]
TOOLS = [{"type": "function", "function": {"name": "list_files", "parameters": {}}}]


def _tokens(text: str) -> int:
    return len(encoding("cl100k_base").encode(text))


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _replies(model: ScriptedModel) -> list[Reply]:
    return [model.complete(USER) for _ in range(model.remaining)]


def test_a_json_list_of_every_entry_form(tmp_path: Path) -> None:
    script = [
        {"name": "list_files", "arguments": {"path": "."}},
        {"name": "write_file", "arguments": '{"path": "a.txt", broken'},
        {"content": "Two at once.", "tool_calls": [{"name": "a"}, {"name": "b"}]},
        "done",
    ]
    model = ScriptedModel.from_file(_write(tmp_path / "script.json", json.dumps(script)))
    assert model.name == "scripted:script.json"
    first, second, third, last = _replies(model)
    assert [(c.name, c.arguments) for c in first.tool_calls] == [("list_files", {"path": "."})]
    assert second.tool_calls[0].arguments == '{"path": "a.txt", broken'
    assert third.content == "Two at once."
    assert [c.name for c in third.tool_calls] == ["a", "b"]
    assert (last.content, last.tool_calls) == ("done", ())


def test_a_one_line_jsonl_string_is_one_reply(tmp_path: Path) -> None:
    model = ScriptedModel.from_file(_write(tmp_path / "script.jsonl", '"done"\n'))
    assert model.remaining == 1
    assert model.complete(USER).content == "done"


def test_a_one_line_jsonl_tool_call_is_one_reply(tmp_path: Path) -> None:
    line = '{"name":"list_files","arguments":{}}'
    model = ScriptedModel.from_file(_write(tmp_path / "script.jsonl", line))
    (call,) = model.complete(USER).tool_calls
    assert (call.name, call.arguments) == ("list_files", {})


def test_jsonl_reads_one_entry_per_non_empty_line(tmp_path: Path) -> None:
    text = '{"name": "read_file", "arguments": {"path": "a.py"}}\n\n  \n"first"\n["not", "json lines"]\n'
    path = _write(tmp_path / "script.jsonl", text)
    with pytest.raises(ConfigError, match=rf"^{path}:5: expected a string"):
        ScriptedModel.from_file(path)
    model = ScriptedModel.from_file(_write(path, text.replace('["not", "json lines"]', '"last"')))
    replies = _replies(model)
    assert [r.content for r in replies] == [None, "first", "last"]
    assert replies[0].tool_calls[0].arguments == {"path": "a.py"}


def test_jsonl_errors_name_the_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", '"ok"\n\n{"name": "x", "arguments": {}\n')
    with pytest.raises(ConfigError, match=rf"^{path}:3: not valid JSON: "):
        ScriptedModel.from_file(path)
    _write(path, '"ok"\n{"name": "x", "arguments": 5}\n')
    with pytest.raises(ConfigError, match=rf"^{path}:2: arguments must be an object"):
        ScriptedModel.from_file(path)


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ('"done"', "a string"),
        ("42", "a number"),
        ("null", "null"),
        ('{"replies": []}', 'an object without "rounds"'),
    ],
)
def test_json_top_level_must_be_a_list_or_rounds(tmp_path: Path, text: str, found: str) -> None:
    path = _write(tmp_path / "script.json", text)
    with pytest.raises(ConfigError) as caught:
        ScriptedModel.from_file(path)
    assert str(caught.value) == (
        f'{path}: expected a list of replies or {{"rounds": {{...}}}}, found {found}'
    )


def test_json_lines_in_a_json_file_are_not_json(tmp_path: Path) -> None:
    path = _write(tmp_path / "script.json", '"one"\n"two"\n')
    with pytest.raises(ConfigError, match=rf"^{path}:2:1: not valid JSON: Extra data"):
        ScriptedModel.from_file(path)


def test_an_unreadable_script_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"missing\.json: cannot read script"):
        ScriptedModel.from_file(tmp_path / "missing.json")


def test_a_rounds_script_replies_per_round(tmp_path: Path) -> None:
    script = {"rounds": {"1": ["first round"], "2": [{"name": "submit"}, "second round"]}}
    model = ScriptedModel.from_file(_write(tmp_path / "rounds.json", json.dumps(script)))
    model.begin_round(2)
    assert model.complete(USER).tool_calls[0].name == "submit"
    model.begin_round(1)
    assert model.complete(USER).content == "first round"
    assert model.remaining == 0
    with pytest.raises(ScriptExhausted, match="no replies for round 3"):
        model.begin_round(3)


@pytest.mark.parametrize(
    ("rounds", "message"),
    [
        ('{"rounds": ["a"]}', '"rounds" must be an object of round lists, found a list'),
        ('{"rounds": {"one": ["a"]}}', "rounds.one: expected a round number and a list"),
        ('{"rounds": {"1": [7]}}', r"rounds.1\[0\]: expected a string"),
    ],
)
def test_a_malformed_rounds_script_says_where(tmp_path: Path, rounds: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ScriptedModel.from_file(_write(tmp_path / "rounds.json", rounds))


def test_begin_round_is_ignored_by_a_plain_script() -> None:
    model = ScriptedModel(["only"])
    model.begin_round(5)
    assert model.complete(USER).content == "only"


def test_exhausting_the_script_is_a_clear_error() -> None:
    model = ScriptedModel(["one"], name="demo")
    model.complete(USER)
    with pytest.raises(ScriptExhausted) as caught:
        model.complete(USER)
    assert str(caught.value) == "demo: script exhausted: it holds 1 replies and call 2 was made"
    assert len(model.calls) == 2


def test_calls_record_messages_tools_and_max_tokens() -> None:
    seen: list[int] = []

    def reply(messages: list[dict[str, object]], tools: list[dict[str, object]]) -> ToolCall:
        seen.append(len(messages))
        return ToolCall("list_files", {})

    model = ScriptedModel([reply, "done"])
    history = list(USER)
    assert model.complete(history, TOOLS, max_tokens=50).tool_calls[0].name == "list_files"
    history.append({"role": "assistant", "content": "later edit"})
    model.complete(history)
    assert seen == [1]
    assert model.calls == [
        ModelRequest(USER, TOOLS, 50),
        ModelRequest(history, [], None),
    ]
    assert model.calls[0].messages is not history


def test_usage_is_counted_with_the_tokenizer() -> None:
    model = ScriptedModel(["The files are a.py and b.py.", ToolCall("read_file", {"path": "a.py"})])
    usage = model.complete(USER, TOOLS).usage
    user = USER[0]
    prompt = _tokens(f"{user['role']}\n{user['content']}") + MESSAGE_OVERHEAD
    prompt += _tokens(json.dumps(TOOLS, sort_keys=True))
    assert (usage.prompt_tokens, usage.calls) == (prompt, 1)
    assert usage.completion_tokens == _tokens("The files are a.py and b.py.")
    assert usage.cost_usd == 0.0
    call_usage = model.complete(USER).usage
    assert call_usage.completion_tokens == _tokens('read_file{"path": "a.py"}')


def test_cost_per_token_prices_prompt_and_completion() -> None:
    model = ScriptedModel(["done"], cost_per_token=(0.001, 0.01))
    usage = model.complete(USER).usage
    assert model.price_per_token() == (0.001, 0.01)
    assert usage.completion_tokens == _tokens("done")
    assert usage.cost_usd == pytest.approx(
        usage.prompt_tokens * 0.001 + usage.completion_tokens * 0.01
    )
    assert usage.cost_usd > 0


def test_a_script_that_is_not_utf8_is_a_clear_error(tmp_path: Path) -> None:
    script = tmp_path / "binary.json"
    script.write_bytes(b"\xff\xfe[\x00")
    not_utf8 = r"binary.json: not UTF-8 text \(byte \d+ is 0x[0-9a-f]{2}\); save it as UTF-8"
    with pytest.raises(ConfigError, match=not_utf8):
        ScriptedModel.from_file(script)


class _Message(dict[str, Any]):
    """A chat message that can be weakly referenced, to see whether a counter still holds it."""


def test_a_long_session_does_not_keep_every_counted_message_alive() -> None:
    model = ScriptedModel()
    messages = [_Message(role="user", content=f"step {i}") for i in range(CACHE_SIZE + 1_000)]
    total = model.count_tokens(messages)
    assert model.count_tokens([dict(m) for m in messages]) == total
    assert model.count_tokens(messages) == total
    refs = [weakref.ref(m) for m in messages]
    del messages
    gc.collect()
    alive = [ref() is not None for ref in refs]
    assert sum(alive) == CACHE_SIZE
    assert all(alive[-CACHE_SIZE:])  # the most recently counted are kept for cheap recounts


def test_max_tokens_is_recorded_for_calls_made_without_one() -> None:
    model = ScriptedModel(["a", "b"], max_tokens=300)
    model.complete(USER)
    model.complete(USER, max_tokens=10)
    assert [call.max_tokens for call in model.calls] == [300, 10]
    with pytest.raises(ConfigError, match="^max_tokens: must be a positive integer, got 0$"):
        ScriptedModel(max_tokens=0)


def test_a_sessions_requests_share_what_they_repeat_and_each_reads_as_it_was_sent() -> None:
    model = ScriptedModel(["a", "b", "c", "d", "e"])
    history: list[dict[str, object]] = [dict(USER[0])]
    model.complete(history)
    history.append({"role": "assistant", "content": "first"})
    model.complete(history)
    first = [dict(m) for m in history]
    history[1]["content"] = "edited in place"  # a change to a message already sent
    history.append({"role": "user", "content": "more"})
    model.complete(history)
    history[1:] = [{"role": "user", "content": "summary"}]  # compacted: a new tail
    model.complete(history, TOOLS)
    model.complete([])

    one, two, three, four, five = (call.messages for call in model.calls)
    assert one == USER
    assert two == first
    assert three == [
        USER[0],
        {"role": "assistant", "content": "edited in place"},
        {"role": "user", "content": "more"},
    ]
    assert four == [USER[0], {"role": "user", "content": "summary"}]
    assert five == []
    assert model.calls[3].tools == TOOLS
    assert model.calls[2].tools == []
    # what a request repeats is the same record, not a copy per request
    assert one[0] is two[0] is three[0] is four[0]
    assert two[1] is not three[1]  # changed since it was sent: recorded again
    assert model.calls[1] == ModelRequest(first, [], None)
    assert model.calls[1] != ModelRequest(first[:1], [], None)
