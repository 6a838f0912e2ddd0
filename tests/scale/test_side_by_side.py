"""Runners side by side: each runner's figures, a task per runner, and the table comparing them."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from harness.core.errors import ConfigError
from harness.scale.batch_report import render_batch_html, render_batch_text
from harness.scale.batch_summary import BatchSummary
from harness.scale.batch_task import BatchTask, TaskRecord, per_runner
from harness.scale.side_by_side import RunnerFigures, compare, side_by_side_table
from harness.scale.swebench import BenchOptions, agent_section
from harness.scale.swebench_outputs import Side
from harness.scale.swebench_summary import SideBySide


def record(
    name: str, runner: str | None, status: str, cost: float, seconds: float, rounds: int = 1
) -> TaskRecord:
    return TaskRecord(
        name=name, status=status, runner=runner, cost_usd=cost, seconds=seconds,
        prompt_tokens=100, completion_tokens=20, rounds=rounds,
    )  # fmt: skip


RECORDS = [
    record("a.codex", "codex", "passed", 0.30, 40.0, rounds=2),
    record("a.harness", "harness", "escalated", 0.10, 12.5),
    record("b.codex", "codex", "passed", 0.50, 20.0),
    record("b.harness", "harness", "passed", 0.20, 7.5),
    record("c.codex", "codex", "error", 0.25, 3.0),
    record("c.harness", "harness", "escalated", 0.15, 10.0),
]


def test_each_runner_is_charged_every_attempt_and_credited_its_passes() -> None:
    codex, harness = compare(RECORDS)
    assert codex == RunnerFigures(
        runner="codex", attempts=3, resolved=2, tokens=360, cost_usd=1.05, seconds=63.0,
        cost_per_resolved=0.525, seconds_per_resolved=31.5, mean_rounds=1.33,
    )  # fmt: skip
    assert harness == RunnerFigures(
        runner="harness", attempts=3, resolved=1, tokens=360, cost_usd=0.45, seconds=30.0,
        cost_per_resolved=0.45, seconds_per_resolved=30.0, mean_rounds=1.0,
    )  # fmt: skip


def test_a_runner_that_resolved_nothing_has_no_figure_per_resolved_and_order_is_kept() -> None:
    failed = [record("a.aider", "aider", "escalated", 0.2, 5.0), record("x", None, "passed", 0, 1)]
    aider, unnamed, codex = compare(failed, order=["aider", "harness", "codex"])
    assert (aider.resolved, aider.cost_per_resolved, aider.seconds_per_resolved) == (0, None, None)
    assert (unnamed.runner, unnamed.resolved) == ("harness", 1)  # recorded without a runner
    assert codex == RunnerFigures(
        runner="codex", attempts=0, resolved=0, tokens=0, cost_usd=0.0, seconds=0.0,
        cost_per_resolved=None, seconds_per_resolved=None,
    )  # fmt: skip
    assert compare([]) == []


def test_the_table_has_a_row_per_runner_with_its_own_figures() -> None:
    assert side_by_side_table(compare(RECORDS)).splitlines() == [
        "runner   resolved  tokens  cost     time   cost/resolved  time/resolved  rounds",
        "codex    2/3       360     $1.0500  63.0s  $0.5250        31.5s          1.33",
        "harness  1/3       360     $0.4500  30.0s  $0.4500        30.0s          1.00",
    ]
    lines = side_by_side_table(compare(RECORDS[1:2]), out_of=4).splitlines()
    assert (
        lines[1] == "harness  0/4       120     $0.1000  12.5s  -              -              1.00"
    )


def test_a_batch_summary_compares_its_runners_only_when_there_are_several() -> None:
    summary = BatchSummary.of(RECORDS, not_started=[], wall_seconds=70, workers=2, backend="local")
    assert [r.runner for r in summary.runners] == ["codex", "harness"]
    text = render_batch_text(summary)
    assert text.endswith("side by side:\n" + side_by_side_table(summary.runners))
    html = render_batch_html(summary)
    assert "<h2>Side by side</h2>" in html
    assert "<td>$0.5250</td>" in html
    assert BatchSummary.model_validate_json(summary.model_dump_json()) == summary
    one = BatchSummary.of(RECORDS[:1], not_started=[], wall_seconds=1, workers=1, backend="local")
    assert len(one.runners) == 1
    assert "side by side" not in render_batch_text(one)
    assert "Side by side" not in render_batch_html(one)


def test_a_batch_runs_each_task_once_per_runner_unless_it_names_its_own() -> None:
    tasks = [
        BatchTask(name="fix", loop="/l/loop.toml"),
        BatchTask(name="own", loop="/l/loop.toml", runner="aider"),
    ]
    expanded = per_runner(tasks, ["codex", "harness"])
    assert [(t.name, t.runner) for t in expanded] == [
        ("fix.codex", "codex"), ("fix.harness", "harness"), ("own", "aider"),
    ]  # fmt: skip
    assert {t.loop for t in expanded} == {"/l/loop.toml"}
    single = per_runner(tasks, ["codex"])
    assert [(t.name, t.runner) for t in single] == [("fix", "codex"), ("own", "aider")]
    assert per_runner(tasks, []) == tasks
    long = [BatchTask(name="a" * 58, loop="/l/loop.toml")]
    assert [t.name for t in per_runner(long, ["codex", "aider"])][0] == "a" * 58 + ".codex"
    with pytest.raises(ConfigError, match=r"^task 'a{58}': too long to be named per runner"):
        per_runner(long, ["codex", "mini-swe-agent"])


def test_a_benchmark_side_finds_the_tasks_the_batch_named_and_names_its_model() -> None:
    task = BatchTask(name="six-1", loop="/i/loop.toml", model="m", workspace="/i/repo")
    for runners in (["codex", "aider"], ["codex"], []):
        sides = BenchOptions(out=Path("o"), model="m", runners=tuple(runners)).sides
        named = [t.name for t in per_runner([task], runners)]
        assert named == [side.task("six-1") for side in sides]
    codex = Side("codex", several=True)
    assert (codex.task("six-1", 2), codex.model_name("gpt-5")) == ("six-1.codex.2", "codex+gpt-5")
    assert Side("codex").task("six-1", 2) == "six-1.2"
    assert Side().model_name("gold") == "gold"
    with pytest.raises(ConfigError, match=r"^task 'i{60}': too long to be named per runner"):
        codex.task("i" * 60)


def test_the_command_goes_into_the_instance_loop_toml_as_a_list() -> None:
    words = ("/usr/bin/python3", 'agent "x".py', "{task_file}")
    section = "\n".join(agent_section(words))
    assert tomllib.loads(section) == {"agent": {"command": list(words)}}
    assert agent_section(None) == []


def test_a_side_by_side_summary_reads_back_and_shows_every_runner_of_every_attempt() -> None:
    rows = compare(RECORDS)
    both = SideBySide(model="m", instances=3, attempts=1, runners=rows, summaries=[])
    assert SideBySide.model_validate_json(both.model_dump_json()) == both
    assert both.table().splitlines() == [
        "model       m",
        "instances   3 (1 attempt per runner)",
        "",
        *side_by_side_table(rows, out_of=3).splitlines(),
    ]
