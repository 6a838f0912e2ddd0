"""The inner loop on real temp folders, driven by ScriptedModel."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from harness import Agent, AgentStop, ScriptedModel, ToolCall, tool
from harness.agent.agent import CUT_SHORT
from harness.agent.ledger import Ledger
from harness.core.errors import ConfigError, ToolError
from harness.core.stop import StopReason
from harness.models.base import Reply, token_ceiling
from harness.models.budget import Budget, Meter, MeteredModel


def test_session_reads_edits_runs_shell_and_answers(tmp_path: Path) -> None:
    (tmp_path / "greet.py").write_text('print("helo")\n')
    model = ScriptedModel(
        [
            ToolCall("read_file", {"path": "greet.py"}),
            ToolCall("edit_file", {"path": "greet.py", "old": "helo", "new": "hello"}),
            ToolCall("run_shell", {"command": "python greet.py"}),
            "Fixed the typo; the script prints hello.",
        ]
    )
    run = Agent(model).run("fix the greeting", tmp_path)
    assert run.stop_reason is AgentStop.ANSWERED
    assert run.final == "Fixed the typo; the script prints hello."
    assert (tmp_path / "greet.py").read_text() == 'print("hello")\n'
    assert run.steps == 4
    observations = [m["content"] for m in run.messages if m["role"] == "tool"]
    assert 'print("helo")' in observations[0]
    assert "[exit code 0]" in observations[2]
    assert "hello" in observations[2]
    assert run.files_touched >= {"greet.py"}
    assert run.commands_run == ["python greet.py"]
    assert run.usage.calls == 4
    assert run.usage.prompt_tokens > 0
    # The model saw each observation before its next reply.
    assert model.calls[3].messages[-1]["content"] == observations[2]


def test_several_calls_in_one_reply_run_in_order_and_each_is_answered(tmp_path: Path) -> None:
    calls = [
        ToolCall("write_file", {"path": "a.txt", "content": "1"}),
        ToolCall("run_shell", {"command": "cat a.txt > b.txt"}),
        ToolCall("read_file", {"path": "b.txt"}),
    ]
    run = Agent(ScriptedModel([calls, "ok"])).run("go", tmp_path)
    tool_messages = [m for m in run.messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == [c.id for c in calls]
    assert "1" in tool_messages[2]["content"]


def test_submit_ends_the_session(tmp_path: Path) -> None:
    model = ScriptedModel([ToolCall("submit", {"summary": "all done"}), "never reached"])
    run = Agent(model).run("go", tmp_path)
    assert run.stop_reason is AgentStop.SUBMITTED
    assert run.final is not None
    assert "all done" in run.final
    assert model.remaining == 1


def test_step_cap_ends_the_session(tmp_path: Path) -> None:
    model = ScriptedModel([ToolCall("list_files", {}) for _ in range(5)])
    run = Agent(model, max_steps=3).run("go", tmp_path)
    assert run.stop_reason is AgentStop.MAX_STEPS
    assert run.steps == 3
    assert model.remaining == 2


def _malformed(rng: random.Random) -> ToolCall:
    kind = rng.randrange(5)
    if kind == 0:
        text = json.dumps({"path": "x"})
        return ToolCall("read_file", text[: rng.randrange(len(text))])  # torn JSON
    if kind == 1:
        return ToolCall(f"no_such_tool_{rng.randrange(100)}", {})
    if kind == 2:
        return ToolCall("read_file", {"path": "x", "start_line": "abc"})
    if kind == 3:
        return ToolCall("edit_file", {"path": "x"})  # missing arguments
    return ToolCall("write_file", json.dumps(["not", "an", "object", "x" * rng.randrange(10**5)]))


def test_a_thousand_malformed_calls_become_error_observations(tmp_path: Path) -> None:
    rng = random.Random(7)
    replies = [[_malformed(rng) for _ in range(10)] for _ in range(100)]
    model = ScriptedModel([*replies, "gave up"])
    run = Agent(model, max_steps=200, max_malformed=1000, compaction="none").run("go", tmp_path)
    assert run.stop_reason is AgentStop.ANSWERED
    errors = [m["content"] for m in run.messages if m["role"] == "tool"]
    assert len(errors) == 1000
    assert all(text.startswith("error") for text in errors)
    assert list(tmp_path.iterdir()) == []


def test_consecutive_malformed_replies_stop_with_a_named_reason(tmp_path: Path) -> None:
    model = ScriptedModel([ToolCall("nope", {}) for _ in range(10)])
    run = Agent(model, max_malformed=3).run("go", tmp_path)
    assert run.stop_reason is AgentStop.MALFORMED
    assert run.steps == 3


def test_a_corrected_call_resets_the_malformed_streak(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            ToolCall("nope", {}),
            ToolCall("nope", {}),
            ToolCall("list_files", {}),
            ToolCall("nope", {}),
            ToolCall("nope", {}),
            "done",
        ]
    )
    run = Agent(model, max_malformed=3).run("go", tmp_path)
    assert run.stop_reason is AgentStop.ANSWERED


def test_a_tool_refusing_its_input_is_not_a_malformed_call(tmp_path: Path) -> None:
    @tool
    def lookup(ticket: int) -> str:
        """Look a ticket up."""
        raise ToolError(f"invalid arguments for lookup: ticket {ticket} does not exist")

    model = ScriptedModel([ToolCall("lookup", {"ticket": 7}) for _ in range(3)] + ["gave up"])
    run = Agent(model, tools=[lookup], max_malformed=2).run("go", tmp_path)

    assert run.stop_reason is AgentStop.ANSWERED
    assert run.messages[3]["content"] == (
        "error: invalid arguments for lookup: ticket 7 does not exist"
    )


def test_the_ledger_notes_the_arguments_of_valid_calls_only(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    ledger = Ledger(goal="go")
    calls = [
        ToolCall("read_file", '{"path": "a.txt", "start_line": "2"}'),
        ToolCall("read_file", '{"path": "b.txt", "start_line": "x"}'),
        ToolCall("read_file", '{"path": "c.txt"'),
        ToolCall("run_shell", {"command": "echo hi"}),
    ]
    Agent(ScriptedModel([calls, "done"])).run("go", tmp_path, ledger=ledger)

    assert ledger.paths == ["a.txt"]
    assert ledger.commands == ["echo hi"]


def test_budget_interrupts_before_the_call_that_would_cross_it(tmp_path: Path) -> None:
    model = ScriptedModel([ToolCall("list_files", {}) for _ in range(50)])
    meter = Meter(Budget(tokens=2_000))
    run = Agent(MeteredModel(model, meter), max_tokens=300).run("go", tmp_path)
    assert run.stop_reason is AgentStop.INTERRUPTED
    assert run.interruption is not None
    assert run.interruption.reason is StopReason.BUDGET_TOKENS
    assert meter.usage.total_tokens <= 2_000
    assert len(model.calls) == meter.usage.calls


def test_running_past_the_script_is_a_clear_error(tmp_path: Path) -> None:
    from harness.core.errors import ScriptExhausted

    with pytest.raises(ScriptExhausted, match="script exhausted"):
        Agent(ScriptedModel([ToolCall("list_files", {})])).run("go", tmp_path)


def test_bad_construction_is_a_configuration_error() -> None:
    with pytest.raises(ConfigError, match="max_steps"):
        Agent(ScriptedModel([]), max_steps=0)


def test_ten_identical_calls_end_the_session_as_stuck_at_the_fourth(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("same\n")
    model = ScriptedModel([ToolCall("read_file", {"path": "a.txt"}) for _ in range(10)])
    run = Agent(model, max_steps=20).run("go", tmp_path)
    assert run.stop_reason is AgentStop.STUCK
    assert run.steps == 4
    assert model.remaining == 6
    assert run.stop_message.startswith("stuck: the call read_file(")
    assert "gave the same result 4 times" in run.stop_message
    observations = [m["content"] for m in run.messages if m["role"] == "tool"]
    assert len(observations) == 4
    assert ["[harness]" in text for text in observations] == [False, False, True, False]
    assert "made this exact call 3 times" in observations[2]
    assert model.calls[3].messages[-1]["content"] == observations[2]  # the model saw the note


def test_a_repeat_with_a_different_result_is_progress_not_a_loop(tmp_path: Path) -> None:
    model = ScriptedModel(
        [ToolCall("run_shell", {"command": "echo x >> log; wc -l < log"}) for _ in range(6)]
        + ["done"]
    )
    run = Agent(model, max_steps=20).run("go", tmp_path)
    assert run.stop_reason is AgentStop.ANSWERED
    assert not any("[harness]" in m["content"] for m in run.messages if m["role"] == "tool")


def test_identical_calls_interleaved_with_others_are_not_stuck(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("same\n")
    read = ToolCall("read_file", {"path": "a.txt"})
    model = ScriptedModel([read, read, ToolCall("list_files", {})] * 3 + ["done"])
    run = Agent(model, max_steps=20).run("go", tmp_path)
    assert run.stop_reason is AgentStop.ANSWERED


def test_consecutive_command_timeouts_end_the_session_as_stuck(tmp_path: Path) -> None:
    slow = [
        ToolCall("run_shell", {"command": f"sleep 5; echo {i}", "timeout": 0.2}) for i in range(8)
    ]
    model = ScriptedModel(slow)
    run = Agent(model, max_steps=20, max_errors=3).run("go", tmp_path)
    assert run.stop_reason is AgentStop.STUCK
    assert run.steps == 4
    assert run.stop_message == "stuck: 4 tool calls in a row failed"
    observations = [m["content"] for m in run.messages if m["role"] == "tool"]
    assert "Your last 3 tool calls all failed" in observations[2]
    assert model.remaining == 4


def test_a_success_resets_the_failure_streak(tmp_path: Path) -> None:
    bad = ToolCall("read_file", {"path": "missing.txt"})
    calls = [bad, ToolCall("read_file", {"path": "gone.txt"}), ToolCall("list_files", {})]
    model = ScriptedModel(calls * 3 + ["done"])
    run = Agent(model, max_steps=20, max_errors=2).run("go", tmp_path)
    assert run.stop_reason is AgentStop.ANSWERED


def test_a_first_request_that_cannot_reach_the_window_is_not_counted() -> None:
    code = (
        "import sys\n"
        "from harness import Agent, ScriptedModel\n"
        "Agent(ScriptedModel(['done'])).check_fits('fix the bug')\n"
        "print('tiktoken' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "False\n"  # the tokenizer was never loaded


def test_a_first_request_past_its_byte_ceiling_is_counted_and_refused_one_token_over() -> None:
    task = "fix the bug " * 400
    first = [
        {"role": "system", "content": Agent(ScriptedModel([])).system_prompt},
        {"role": "user", "content": task},
    ]
    schemas = Agent(ScriptedModel([])).toolbox.schemas()
    needed = ScriptedModel([]).count_tokens(first, schemas)
    assert token_ceiling(ScriptedModel([]), first, schemas) > needed  # the count decides

    Agent(ScriptedModel([], context_window=needed)).check_fits(task)  # fits exactly
    with pytest.raises(ConfigError, match=f"needs {needed:,} tokens .* at most {needed - 1:,}"):
        Agent(ScriptedModel([], context_window=needed - 1)).check_fits(task)


def test_an_answer_cut_at_its_token_limit_is_not_taken_for_the_answer(tmp_path: Path) -> None:
    model = ScriptedModel([Reply("Step one: read the", truncated=True), "Step one: read the file."])
    run = Agent(model, tools=[]).run("explain it", tmp_path)
    assert (run.stop_reason, run.final, run.steps) == (
        AgentStop.ANSWERED, "Step one: read the file.", 2,
    )  # fmt: skip
    told = model.calls[1].messages[-2:]
    assert told == [
        {"role": "assistant", "content": "Step one: read the"},
        {"role": "user", "content": CUT_SHORT},
    ]


def test_replies_cut_again_and_again_end_at_the_step_cap(tmp_path: Path) -> None:
    model = ScriptedModel([Reply("and so", truncated=True)] * 3)
    run = Agent(model, tools=[], max_steps=3).run("explain it", tmp_path)
    assert (run.stop_reason, run.final, run.steps) == (AgentStop.MAX_STEPS, None, 3)
