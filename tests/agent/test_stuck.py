"""Stuck detection: cycles of period 1 to 4 with the same results end a session; progress does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import Agent, ScriptedModel, ToolCall
from harness.agent.agent import AgentStop
from harness.agent.stuck import StuckWatch


def feed(watch: StuckWatch, calls: list[str]) -> list[str | None]:
    """The note after each call of ``calls`` (a letter is a call, its result the same letter)."""
    return [watch.observe(c, "{}", f"result of {c}", failed=False) for c in calls]


@pytest.mark.parametrize(
    ("cycle", "noted_at"),
    [("A", 3), ("AB", 6), ("ABC", 9), ("ABCD", 12)],
    ids=["period-1", "period-2", "period-3", "period-4"],
)
def test_a_cycle_is_noted_after_3_rounds_and_stuck_at_the_next_call(
    cycle: str, noted_at: int
) -> None:
    watch = StuckWatch()
    calls = list(cycle * 3) + [cycle[0]]

    notes = feed(watch, calls[:-1])

    assert [i + 1 for i, note in enumerate(notes) if note] == [noted_at]
    assert watch.verdict() is None  # noted, not yet stuck
    feed(watch, calls[-1:])
    verdict = watch.verdict()
    assert verdict is not None
    if len(cycle) == 1:
        assert verdict == "the call A({}) gave the same result 4 times"
    else:
        listed = ", ".join(f"{c}({{}})" for c in cycle[1:] + cycle[0])
        assert verdict == (
            f"{noted_at + 1} calls in a row went round the same {len(cycle)} calls ({listed}) "
            "with the same results"
        )


def test_the_cycle_note_names_the_calls_and_how_often_they_went_round() -> None:
    notes = feed(StuckWatch(), list("ABABAB"))
    assert notes[-1] == (
        "[harness] Your last 6 calls went round the same 2 calls (A({}), B({})) 3 times with "
        "the same results each time; going round again will not change them. Try something else."
    )


def test_a_cycle_broken_after_its_note_is_not_stuck() -> None:
    watch = StuckWatch()
    feed(watch, list("ABABAB"))
    feed(watch, ["C"])
    assert watch.verdict() is None
    feed(watch, list("ABAB"))  # a new cycle starts counting from nothing
    assert watch.verdict() is None


def test_a_cycle_longer_than_max_period_is_not_watched() -> None:
    watch = StuckWatch()
    assert feed(watch, list("ABCDE" * 4)) == [None] * 20
    assert watch.verdict() is None
    longer = StuckWatch(max_period=5)
    assert feed(longer, list("ABCDE" * 3))[-1] is not None


def test_calls_whose_results_change_are_progress_not_a_cycle() -> None:
    watch = StuckWatch()
    for attempt in range(20):  # edit, run the tests; each edit differs, the tests fail the same
        assert (
            watch.observe("edit_file", f'{{"new": "try {attempt}"}}', "edited", failed=False)
            is None
        )
        assert watch.observe("run_shell", '{"command": "pytest"}', "1 failed", failed=False) is None
    assert watch.verdict() is None
    same_call = StuckWatch()
    for attempt in range(20):  # the same call, but its result moves on
        assert same_call.observe("run_shell", "{}", f"{attempt} lines", failed=False) is None
    assert same_call.verdict() is None


def test_a_session_alternating_two_calls_ends_stuck_long_before_max_steps(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("same\n")
    read, listing = ToolCall("read_file", {"path": "a.txt"}), ToolCall("list_files", {})
    model = ScriptedModel([read, listing] * 25)

    run = Agent(model, max_steps=50).run("go", tmp_path)

    assert run.stop_reason is AgentStop.STUCK
    assert run.steps == 7
    assert run.stop_message.startswith("stuck: 7 calls in a row went round the same 2 calls (")
    observations = [m["content"] for m in run.messages if m["role"] == "tool"]
    assert ["[harness]" in text for text in observations] == [False] * 5 + [True, False]
    assert "went round the same 2 calls" in observations[5]
    assert model.calls[6].messages[-1]["content"] == observations[5]  # the model saw the note


def test_an_edit_and_test_alternation_whose_edits_differ_runs_to_its_answer(
    tmp_path: Path,
) -> None:
    script: list[object] = []
    for attempt in range(12):
        script.append(ToolCall("write_file", {"path": "n.txt", "content": f"{attempt}\n"}))
        script.append(ToolCall("run_shell", {"command": "cat n.txt"}))
    model = ScriptedModel([*script, "done"])  # type: ignore[list-item]

    run = Agent(model, max_steps=50).run("go", tmp_path)

    assert run.stop_reason is AgentStop.ANSWERED
    assert run.steps == 25
    assert not any("[harness]" in m["content"] for m in run.messages if m["role"] == "tool")
