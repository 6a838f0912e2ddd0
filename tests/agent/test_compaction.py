"""Compaction strategies and the session ledger."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import tiktoken.core
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.agent.agent import Agent, AgentStop
from harness.agent.compaction import (
    MAX_ATTEMPTS,
    Compaction,
    ContextOverflow,
    MaskObservations,
    NoCompaction,
    Summarize,
    make_compaction,
)
from harness.agent.ledger import MAX_COMMAND_CHARS, Ledger
from harness.agent.summary_prompt import SUMMARY_HEADER, SUMMARY_INSTRUCTION
from harness.agent.transcript import MASK_PREFIX
from harness.core.errors import ConfigError
from harness.core.event_schema import Compaction as CompactionEvent
from harness.models.base import Message, ToolCall
from harness.models.scripted import ScriptedModel
from harness.models.tokens import TokenCounter, count_text
from tests.conftest import RecordingSink

SYSTEM = {"role": "system", "content": "You are a careful agent."}


def words(n: int, word: str = "lorem") -> str:
    return " ".join([word] * n)


def tool_turn(
    call_id: str, name: str, arguments: dict[str, Any], output: str, thought: str | None = None
) -> list[Message]:
    call = ToolCall(name, arguments, id=call_id).to_message_part()
    return [
        {"role": "assistant", "content": thought, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": output},
    ]


def session(steps: int, output_words: int = 300) -> list[Message]:
    """A system prompt, a task, then ``steps`` read_file calls with large outputs."""
    messages = [SYSTEM, {"role": "user", "content": "Goal: make tests pass."}]
    for i in range(steps):
        messages += tool_turn(
            f"c{i}", "read_file", {"path": f"src/m{i}.py"}, words(output_words), f"thinking {i}"
        )
    return messages


def assert_paired(messages: list[Message]) -> None:
    """Every tool call is answered right after its message; every result answers such a call."""
    pending: list[str] = []
    for message in messages:
        if message["role"] == "tool":
            assert pending, f"tool result without a call: {message['tool_call_id']}"
            assert message["tool_call_id"] == pending.pop(0)
            continue
        assert not pending, f"calls {pending} not answered before a {message['role']} message"
        pending = [c["id"] for c in message.get("tool_calls") or ()]
    assert not pending


def summariser(text: str = "The agent read files.", calls: int = 4) -> ScriptedModel:
    return ScriptedModel([text] * calls, context_window=2_000)


# --- the trigger ------------------------------------------------------------------------------


def test_below_the_threshold_messages_pass_through_without_a_model_call() -> None:
    messages = session(3, output_words=20)
    model = ScriptedModel([], context_window=100_000)
    for strategy in (Summarize(), MaskObservations(), NoCompaction()):
        assert strategy.maybe_compact(messages, model=model) is messages
        assert strategy.records == []
    assert model.calls == []


def test_trigger_uses_the_context_window_override_instead_of_the_models() -> None:
    messages = session(10)
    model = ScriptedModel([], context_window=1_000_000)
    assert MaskObservations().maybe_compact(messages, model=model) is messages
    masked = MaskObservations(context_window=2_000).maybe_compact(messages, model=model)
    assert masked is not messages
    assert TokenCounter(model.name).count(masked) <= 1_600


class CountingModel(ScriptedModel):
    """A scripted model that notes each exact count asked of it."""

    def __init__(self, context_window: int) -> None:
        super().__init__([], context_window=context_window)
        self.counted = 0

    def count_tokens(self, messages: list[Message], tools: Any = None) -> int:
        self.counted += 1
        return super().count_tokens(messages, tools)


@pytest.mark.parametrize("soft", [None, 0.5], ids=["hard", "soft"])
def test_the_exact_count_is_taken_only_once_the_ceiling_reaches_a_trigger(
    soft: float | None,
) -> None:
    messages = session(4, output_words=200)  # "lorem " is 6 bytes and 1 token
    exact, ceiling = TokenCounter().count(messages), TokenCounter().ceiling(messages)
    assert ceiling > 4 * exact
    trigger = 0.8 if soft is None else soft
    # A window whose trigger the ceiling stays under: nothing is counted.
    roomy = CountingModel(context_window=int(ceiling / trigger) + 1)
    assert MaskObservations(soft_threshold=soft).maybe_compact(messages, model=roomy) is messages
    assert roomy.counted == 0
    # The ceiling over the trigger, the count under it: counted once, nothing compacted.
    close = CountingModel(context_window=int(2 * exact / trigger))
    strategy = MaskObservations(soft_threshold=soft)
    assert strategy.maybe_compact(messages, model=close) is messages
    assert (close.counted, strategy.records) == (1, [])
    # The count over the trigger: compacted as before.
    full = CountingModel(context_window=int(exact / trigger) - 1)
    strategy = MaskObservations(soft_threshold=soft, keep_last=1)
    assert strategy.maybe_compact(messages, model=full) is not messages
    assert [record.trigger for record in strategy.records] == ["hard" if soft is None else "soft"]


# --- summarize --------------------------------------------------------------------------------


def test_summarize_keeps_system_prompt_and_tail_and_puts_summary_with_ledger_after_it() -> None:
    messages = session(10)
    ledger = Ledger("make tests pass", rules=["never edit tests/"], open_items=["fix parser"])
    ledger.note_tool_call("read_file", {"path": "src/m0.py"})
    model = summariser("Read src/m0.py .. src/m9.py; decided to rewrite the parser.")
    result = Summarize(context_window=3_000).maybe_compact(messages, model=model, ledger=ledger)

    assert result[0] is SYSTEM
    assert result[-6:] == messages[-6:]
    assert len(result) == 8
    summary = result[1]
    assert summary["role"] == "user"
    assert summary["content"].startswith(SUMMARY_HEADER)
    assert "decided to rewrite the parser" in summary["content"]
    assert ledger.render() in summary["content"]
    assert_paired(result)


def test_summary_request_carries_the_preservation_instruction() -> None:
    messages = session(10)
    model = summariser()
    strategy = Summarize(context_window=3_000, summary_max_tokens=300)
    strategy.maybe_compact(messages, model=model, ledger=Ledger("make tests pass"))

    (request,) = model.calls
    assert request.messages[0] == {"role": "system", "content": SUMMARY_INSTRUCTION}
    for must_keep in ("goal", "Unfinished work", "Decisions", "file path", "Errors"):
        assert must_keep in SUMMARY_INSTRUCTION
    assert request.max_tokens is not None
    assert 64 <= request.max_tokens <= 300
    transcript = request.messages[1]["content"]
    assert "Ledger:\nGoal:\nmake tests pass" in transcript
    assert "thinking 0" in transcript
    assert '"path": "src/m0.py"' in transcript
    assert "thinking 9" not in transcript  # the kept tail is not summarised


def test_summary_of_a_summary_passes_the_earlier_summary_whole() -> None:
    long_summary = "Decision: keep the cache. " + words(1_500, "detail") + " Unfinished: docs."
    model = ScriptedModel([long_summary, "second"], context_window=100_000)
    strategy = Summarize(context_window=6_000, clip_chars=500)
    first = strategy.maybe_compact(session(20), model=model)
    grown = first + session(20)[2:]
    strategy.maybe_compact(grown, model=model)

    second_request = model.calls[1].messages[1]["content"]
    assert "Decision: keep the cache." in second_request
    assert "Unfinished: docs." in second_request
    assert len(strategy.records) == 2


def test_summarize_never_separates_parallel_calls_from_their_results() -> None:
    messages = session(6)
    calls = [ToolCall("run_shell", {"command": f"echo {i}"}, id=f"p{i}") for i in range(4)]
    messages.append(
        {"role": "assistant", "content": None, "tool_calls": [c.to_message_part() for c in calls]}
    )
    messages += [{"role": "tool", "tool_call_id": f"p{i}", "content": words(200)} for i in range(4)]
    result = Summarize(context_window=2_000, keep_last=2).maybe_compact(
        messages, model=summariser()
    )
    assert len(result) == 7
    assert result[-5:] == messages[-5:]  # the cut moved back to the assistant message
    assert_paired(result)


TURN = st.one_of(
    st.tuples(st.just("say"), st.integers(1, 300)),
    st.tuples(st.just("user"), st.integers(1, 300)),
    st.tuples(st.just("calls"), st.lists(st.integers(0, 3_000), min_size=1, max_size=3)),
)


def build_transcript(turns: list[tuple[str, Any]]) -> list[Message]:
    messages: list[Message] = [SYSTEM, {"role": "user", "content": "Goal: fix it."}]
    for n, (kind, size) in enumerate(turns):
        if kind == "say":
            messages.append({"role": "assistant", "content": words(size, "hmm")})
        elif kind == "user":
            messages.append({"role": "user", "content": words(size, "note")})
        else:
            ids = [f"t{n}_{i}" for i in range(len(size))]
            parts = [ToolCall("run_shell", {"command": "ls"}, id=i).to_message_part() for i in ids]
            messages.append({"role": "assistant", "content": None, "tool_calls": parts})
            for call_id, out in zip(ids, size, strict=True):
                content = "[exit code 0]\n" + words(out, "out")
                messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
    return messages


@settings(max_examples=80, deadline=None)
@given(
    turns=st.lists(TURN, min_size=1, max_size=25),
    name=st.sampled_from(["summarize", "mask_observations"]),
    window=st.integers(1_000, 8_000),
    keep_last=st.integers(1, 8),
)
def test_compaction_never_breaks_tool_call_pairing(
    turns: list[tuple[str, Any]], name: str, window: int, keep_last: int
) -> None:
    messages = build_transcript(turns)
    kind = Summarize if name == "summarize" else MaskObservations
    strategy = kind(context_window=window, keep_last=keep_last)
    model = summariser(calls=MAX_ATTEMPTS)
    overflow = None
    try:
        result = strategy.maybe_compact(messages, model=model, ledger=Ledger("fix it"))
    except ContextOverflow as stop:
        overflow = stop
    if overflow is not None:
        assert overflow.tokens > overflow.limit == int(window * 0.8)
        assert len(model.calls) <= MAX_ATTEMPTS
        return
    assert_paired(result)
    assert TokenCounter(model.name).count(result) <= int(window * 0.8)
    assert result[0] is SYSTEM
    if name == "summarize":
        assert result[-1] is messages[-1]
    else:
        assert len(result) == len(messages)
        assert model.calls == []


# --- mask_observations -------------------------------------------------------------------------


def test_masking_needs_no_model_call_and_keeps_reasoning_and_recent_observations() -> None:
    messages = session(10)
    model = ScriptedModel([], context_window=3_000)  # any call would raise ScriptExhausted
    strategy = MaskObservations(keep_last=3)
    result = strategy.maybe_compact(messages, model=model)

    assert model.calls == []
    assert len(result) == len(messages)
    tools = [m for m in result if m["role"] == "tool"]
    assert [t["content"].startswith(MASK_PREFIX) for t in tools] == [True] * 7 + [False] * 3
    assert tools[-3:] == [m for m in messages if m["role"] == "tool"][-3:]
    assert [m for m in result if m["role"] != "tool"] == [
        m for m in messages if m["role"] != "tool"
    ]
    assert strategy.records[0].model_tokens == 0


def test_mask_placeholder_names_tool_arguments_exit_code_and_size() -> None:
    output = "[exit code 1]\n" + "F" * (48_213 - 14)
    messages = [
        SYSTEM,
        *tool_turn("a", "run_shell", {"command": "pytest -q"}, output),
        *tool_turn("b", "read_file", {"path": "x.py"}, "tiny"),
    ]
    result = MaskObservations(keep_last=1, context_window=2_000).maybe_compact(
        messages, model=ScriptedModel([])
    )
    assert result[2]["content"] == (
        '[observation masked: run_shell {"command": "pytest -q"} → exit code 1, 48,213 chars]'
    )
    assert result[2]["tool_call_id"] == "a"
    assert result[4]["content"] == "tiny"


def test_soft_threshold_masks_early_without_a_model_call() -> None:
    messages = session(10)
    model = ScriptedModel([], context_window=10_000)
    strategy = Summarize(soft_threshold=0.3, keep_last=2)
    result = strategy.maybe_compact(messages, model=model)
    assert model.calls == []
    assert sum(m["content"].startswith(MASK_PREFIX) for m in result if m["role"] == "tool") == 8
    (record,) = strategy.records
    assert (record.strategy, record.trigger) == ("mask_observations", "soft")


# --- guards ------------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", [Summarize(), MaskObservations()], ids=["sum", "mask"])
def test_a_single_huge_message_stops_with_context_full(strategy: Compaction) -> None:
    messages = [SYSTEM, {"role": "user", "content": words(5_000)}]
    model = ScriptedModel([], context_window=2_000)
    with pytest.raises(ContextOverflow, match=r"context still [\d,]+ tokens > threshold 1,600 "):
        strategy.maybe_compact(messages, model=model)
    assert model.calls == []
    assert ContextOverflow.reason == "context_full"


def test_a_summary_that_is_itself_too_long_stops_after_bounded_attempts() -> None:
    model = ScriptedModel([words(3_000)] * 10, context_window=3_000)
    with pytest.raises(ContextOverflow, match="summarize made 2 attempts") as stop:
        Summarize().maybe_compact(session(10), model=model)
    assert len(model.calls) == MAX_ATTEMPTS
    first, second = (call.max_tokens or 0 for call in model.calls)
    assert 0 < second < first
    assert stop.value.tokens > stop.value.limit == 2_400


def test_second_attempt_keeps_only_the_last_turn_when_the_tail_is_too_big() -> None:
    messages = session(8, output_words=50)
    messages += tool_turn("big", "read_file", {"path": "big.txt"}, words(1_750))
    messages += tool_turn("last", "run_shell", {"command": "ls"}, "[exit code 0]\nok")
    model = summariser()
    strategy = Summarize(context_window=2_200, keep_last=4)
    result = strategy.maybe_compact(messages, model=model)
    assert result[-2:] == messages[-2:]
    assert len(result) == 4
    assert strategy.records[0].attempts == 2
    assert len(model.calls) == 1  # the first attempt saw no room for a summary and asked nothing


# --- records, events and the ledger -------------------------------------------------------------


def test_each_compaction_is_recorded_and_emitted_with_what_it_dropped() -> None:
    sink = RecordingSink()
    strategy = Summarize(context_window=3_000)
    model = summariser()
    strategy.maybe_compact(session(10), model=model, events=sink)

    (record,) = strategy.records
    assert record.strategy == "summarize"
    assert record.tokens_after < record.tokens_before
    assert record.duration >= 0
    assert record.model_tokens > 0
    assert len(record.dropped) == 15  # the task and 7 turns; the last 6 messages stay
    assert record.dropped[0].startswith("user: 'Goal: make tests pass.'")
    assert any('read_file {"path": "src/m0.py"}' in d for d in record.dropped)
    built, *_ = sink.models
    assert isinstance(built, CompactionEvent)
    assert built.tokens_before == record.tokens_before
    assert built.dropped == list(record.dropped)
    assert (built.trigger, built.attempts) == ("hard", 1)
    assert built.model_tokens == record.model_tokens


def test_ledger_survives_repeated_summaries_that_forget_everything() -> None:
    ledger = Ledger("port the CLI", rules=["keep the public API"], open_items=["update docs"])
    messages = session(12)
    for i in range(12):
        ledger.note_tool_call("read_file", {"path": f"src/m{i}.py"})
    ledger.note_tool_call("run_shell", {"command": "pytest -q tests/test_cli.py"})
    strategy = Summarize(context_window=3_000)
    model = summariser("nothing to report")
    context = strategy.maybe_compact(messages, model=model, ledger=ledger)
    context = strategy.maybe_compact(context + session(12)[2:], model=model, ledger=ledger)

    text = json.dumps(context)
    assert len(strategy.records) == 2
    for fact in ("port the CLI", "keep the public API", "update docs", "src/m0.py", "src/m11.py"):
        assert fact in text
    assert "pytest -q tests/test_cli.py" in text


def test_ledger_notes_paths_and_commands_once_in_order() -> None:
    ledger = Ledger("goal")
    ledger.note_tool_call("read_file", {"path": "a.py"})
    ledger.note_tool_call("list_files", {"path": "."})
    ledger.note_tool_call("edit_file", {"path": "b.py", "old": "x", "new": "y"})
    ledger.note_tool_call("read_file", {"path": "a.py", "start_line": 3})
    ledger.note_tool_call("run_shell", {"command": "pytest -q"})
    ledger.note_tool_call("run_shell", {"command": "pytest -q"})
    ledger.note_tool_call("run_shell", {"command": "cat <<EOF\n" + "z" * 5_000 + "\nEOF"})
    assert ledger.paths == ["a.py", "b.py"]
    assert ledger.commands[0] == "pytest -q"
    assert len(ledger.commands) == 2
    rendered = ledger.render()
    assert "- pytest -q  (x2)" in rendered
    assert "characters truncated" in rendered
    assert max(len(line) for line in rendered.splitlines()) <= MAX_COMMAND_CHARS + 2


# --- inside the agent ---------------------------------------------------------------------------


def test_agent_stops_with_context_full_when_nothing_can_be_compacted(tmp_path: Path) -> None:
    model = ScriptedModel(["never asked"], context_window=1_000)
    run = Agent(model, compaction="summarize").run(words(3_000), workspace=tmp_path)
    assert run.stop_reason == AgentStop.CONTEXT_FULL
    assert "context still" in run.stop_message
    assert model.calls == []


def test_agent_session_is_summarised_and_summary_tokens_count_in_its_usage(tmp_path: Path) -> None:
    for i in range(8):
        (tmp_path / f"part{i}.txt").write_text(words(400, f"w{i}") + "\n")

    steps = iter(range(9))

    def reply(messages: list[Message], tools: object) -> str | ToolCall:
        if messages[0]["content"] == SUMMARY_INSTRUCTION:
            return "Read the parts in order."
        step = next(steps)
        return ToolCall("read_file", {"path": f"part{step}.txt"}) if step < 8 else "done"

    model = ScriptedModel([reply] * 20, context_window=3_500)
    strategy = Summarize()
    run = Agent(model, compaction=strategy).run("Read every part.", workspace=tmp_path)

    assert run.stop_reason == AgentStop.ANSWERED
    assert strategy.records
    summaries = [c for c in model.calls if c.messages[0]["content"] == SUMMARY_INSTRUCTION]
    assert len(summaries) == len(strategy.records)
    assert run.usage.calls == len(model.calls)  # summary requests are metered like the rest
    assert "part0.txt" in json.dumps(run.messages)  # via the ledger, not the summary
    assert_paired(run.messages)


def test_each_message_is_tokenised_once_across_compaction_and_the_model_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(4):
        (tmp_path / f"notes{i}.txt").write_text(words(200, f"n{i}") + "\n")
    encoded: list[str] = []
    encode = tiktoken.core.Encoding.encode

    def spy(self: tiktoken.core.Encoding, text: str, **kwargs: Any) -> list[int]:
        encoded.append(text)
        return encode(self, text, **kwargs)

    count_text("load the encoding first")
    monkeypatch.setattr(tiktoken.core.Encoding, "encode", spy)
    script = [ToolCall("read_file", {"path": f"notes{i}.txt"}) for i in range(4)]
    model = ScriptedModel([*script, "done"], context_window=100_000)
    strategy = MaskObservations(soft_threshold=0.5)  # counts before every call, never compacts
    run = Agent(model, compaction=strategy).run("Read the notes.", workspace=tmp_path)

    assert run.stop_reason == AgentStop.ANSWERED
    assert len(model.calls) == 5
    assert strategy.records == []
    duplicates = sorted({text[:40] for text in encoded if encoded.count(text) > 1})
    assert duplicates == []
    assert len(encoded) >= len(run.messages)


# --- configuration -----------------------------------------------------------------------------


def test_make_compaction_resolves_names_and_objects() -> None:
    assert isinstance(make_compaction(None), NoCompaction)
    assert isinstance(make_compaction("none"), NoCompaction)
    assert isinstance(make_compaction("summarize"), Summarize)
    assert isinstance(make_compaction("mask_observations"), MaskObservations)
    custom = MaskObservations(keep_last=2)
    assert make_compaction(custom) is custom
    for bad in ("summarise", 42):
        with pytest.raises(ConfigError, match=re.escape(repr(bad))):
            make_compaction(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"threshold": 0}, "threshold"),
        ({"threshold": 1.5}, "threshold"),
        ({"soft_threshold": 0.9}, "soft_threshold"),
        ({"context_window": 0}, "context_window"),
        ({"keep_last": 0}, "keep_last"),
        ({"summary_max_tokens": 10}, "summary_max_tokens"),
    ],
)
def test_invalid_options_name_the_field(options: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError, match=f"^{field}:"):
        Summarize(**options)


def test_the_summary_request_leaves_the_process_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "canary-" + "Vb4Nc8Pq2Ws6"
    monkeypatch.setenv("CANARY_API_KEY", secret)
    messages = session(10)
    messages[3] = {**messages[3], "content": f"DATABASE_URL=postgres://app:{secret}@db/main"}
    model = summariser()

    Summarize(context_window=3_000).maybe_compact(messages, model=model)

    request = json.dumps(model.calls[0].messages)
    assert "postgres://app:[REDACTED]@db/main" in request
    assert secret not in request


@pytest.mark.parametrize("kind", [Summarize, MaskObservations])
def test_a_strategy_takes_the_window_agent_config_takes(kind: type) -> None:
    assert kind(context_window=1_000).context_window == 1_000
    with pytest.raises(
        ConfigError, match="^context_window: must be an integer at least 1000, got 999$"
    ):
        kind(context_window=999)
    with pytest.raises(
        ConfigError, match="^context_window: must be an integer at least 1000, got True$"
    ):
        kind(context_window=True)
