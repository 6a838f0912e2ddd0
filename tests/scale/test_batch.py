"""Batches from Python: every task a full loop on its own branch, resumable, within a budget."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from harness import Agent, Batch, BatchTask, CommandGate, OuterLoop, ScriptedModel, ToolCall
from harness.core.errors import ConfigError
from harness.models.budget import Budget
from harness.scale.batch import BatchProgress
from harness.scale.batch_report import render_batch_html, render_batch_text
from harness.scale.batch_summary import BatchSummary
from harness.scale.batch_task import TaskRecord, load_tasks, read_record
from harness.scale.task_run import TaskRun
from tests.conftest import git, make_repo


class Loops:
    """Builds each task's loop on one shared repository; ``answers`` says what a task writes."""

    def __init__(self, repo: Path, answers: dict[str, str]) -> None:
        self.repo = repo
        self.answers = answers
        self.built: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, task: BatchTask, run: TaskRun) -> OuterLoop:
        with self.lock:
            self.built.append(task.name)
        answer = self.answers[task.name]
        model = ScriptedModel(
            [ToolCall("write_file", {"path": "out.txt", "content": answer}), f"wrote {answer}"]
        )
        return OuterLoop(
            task.goal or "out.txt says yes", Agent(model),
            gates=[CommandGate("grep -qx yes out.txt", name="says yes")],
            workspace=self.repo, progress=run.progress, max_iterations=1, run_id=run.run_id, name=task.name,
        )  # fmt: skip


def test_every_task_runs_on_its_own_branch_and_the_totals_add_up(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "hi\n"})
    answers = {f"t{i}": "yes" for i in range(5)} | {"wrong": "no"}
    seen: list[BatchProgress] = []
    summary = Batch(
        [{"name": n} for n in answers], Loops(repo, answers), workers=3, out=tmp_path / "out",
        on_progress=seen.append,
    ).run()  # fmt: skip
    by_name = {r.name: r for r in summary.tasks}
    assert [r.name for r in summary.tasks] == list(answers)
    assert {n: r.status for n, r in by_name.items()} == {
        n: "passed" if a == "yes" else "escalated" for n, a in answers.items()
    }
    assert by_name["wrong"].stop_reason == "MAX_ITERATIONS"
    assert summary.counts == {"passed": 5, "escalated": 1}
    assert summary.pass_rate == pytest.approx(5 / 6)
    assert summary.totals.tokens == sum(r.tokens for r in summary.tasks) > 0
    assert summary.totals.prompt_tokens == sum(r.prompt_tokens for r in summary.tasks)
    branches = {r.branch for r in summary.tasks}
    assert len(branches) == 6
    assert None not in branches
    for record in summary.tasks:
        assert record.rounds == 1
        assert record.branch is not None
        assert record.branch.startswith(f"harness/{record.name}.")
        assert git(repo, "show", f"{record.branch}:out.txt") == answers[record.name]
    assert git(repo, "status", "--porcelain") == ""  # the user's checkout is untouched
    assert not (repo / "out.txt").exists()
    assert BatchSummary.load(tmp_path / "out") == summary.model_copy(
        update={"wall_seconds": summary.wall_seconds}
    )
    assert seen[-1].done == 6
    assert seen[-1].running == 0
    assert seen[-1].failed == 1
    assert "batch: 6/6 done, 0 running, 1 failed" in seen[-1].line()


def test_a_rerun_skips_ended_tasks_and_reruns_an_interrupted_one(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "hi\n"})
    answers = {"a": "yes", "b": "no", "c": "yes"}
    out = tmp_path / "out"
    Batch([{"name": n} for n in answers], Loops(repo, answers), workers=2, out=out).run()
    # As a batch killed while "c" ran leaves it:
    TaskRecord(name="c", status="running", starts=1).save(out)
    again = Loops(repo, answers)
    summary = Batch([{"name": n} for n in answers], again, workers=2, out=out).run()
    assert again.built == ["c"]  # neither the pass nor the escalation is run again
    assert [(r.name, r.status, r.starts) for r in summary.tasks] == [
        ("a", "passed", 1), ("b", "escalated", 1), ("c", "passed", 2),
    ]  # fmt: skip
    third = Loops(repo, answers)
    Batch([{"name": n} for n in answers], third, workers=2, out=out).run()
    assert third.built == []


def test_the_batch_budget_stops_starting_new_tasks(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "hi\n"})
    answers = {f"t{i}": "yes" for i in range(4)}
    loops = Loops(repo, answers)
    summary = Batch(
        [{"name": n} for n in answers], loops, workers=1, out=tmp_path / "out", budget=Budget(tokens=1)
    ).run()  # fmt: skip
    assert loops.built == ["t0"]
    assert [r.name for r in summary.tasks] == ["t0"]
    assert summary.not_started == ["t1", "t2", "t3"]
    assert summary.counts == {"passed": 1, "not_started": 3}
    assert summary.pass_rate == 0.25
    assert read_record(tmp_path / "out", "t1") is None  # a re-run with more budget starts it
    more = Loops(repo, answers)
    done = Batch([{"name": n} for n in answers], more, workers=2, out=tmp_path / "out").run()
    assert sorted(more.built) == ["t1", "t2", "t3"]
    assert done.counts == {"passed": 4}
    assert done.not_started == []


def test_a_task_whose_loop_cannot_be_built_is_an_error_record_and_the_batch_goes_on(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "hi\n"})
    loops = Loops(repo, {"good": "yes"})

    def loop_for(task: BatchTask, run: TaskRun) -> OuterLoop:
        if task.name == "broken":
            raise ConfigError("loop.toml: field 'goal': required field is missing")
        return loops(task, run)

    summary = Batch([{"name": "broken"}, {"name": "good"}], loop_for, out=tmp_path / "out").run()
    assert [(r.name, r.status) for r in summary.tasks] == [("broken", "error"), ("good", "passed")]
    assert "field 'goal'" in summary.tasks[0].message


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"name": "a", "loop": "x.toml", "max_iterations": 0}', ":2: field 'max_iterations'"),
        ('{"name": "bad name!", "loop": "x.toml"}', ":2: field 'name'"),
        ('{"name": "a", "loop": "x.toml", "colour": "red"}', ":2: field 'colour': unknown field"),
        ('{"name": "a", "budget": {"tokens": -1}}', ":2: field 'budget.tokens'"),
        ('{"name": "a", "loop": ', ":2: not valid JSON"),
        ('["a"]', ":2: expected a JSON object"),
        ('{"name": "first"}', "'first' is used twice"),
    ],
)
def test_a_bad_task_line_is_named_by_line_and_field(
    tmp_path: Path, line: str, expected: str
) -> None:
    file = tmp_path / "tasks.jsonl"
    file.write_text('{"name": "first", "loop": "x.toml"}\n' + line + "\n")
    with pytest.raises(ConfigError, match="tasks.jsonl") as caught:
        load_tasks(file)
    assert expected in str(caught.value)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (b'{"name": "b\xff"}', "tasks.jsonl: not UTF-8 text (byte 47 is 0xff); save it as UTF-8"),
        (b"[" * 100_000 + b"]" * 100_000, "tasks.jsonl:2: nested too deeply to read"),
    ],
)
def test_a_task_file_that_is_not_utf8_or_nested_too_deeply_is_a_config_error(
    tmp_path: Path, line: bytes, expected: str
) -> None:
    file = tmp_path / "tasks.jsonl"
    file.write_bytes(b'{"name": "first", "loop": "x.toml"}\n' + line + b"\n")
    with pytest.raises(ConfigError) as caught:
        load_tasks(file)
    assert str(caught.value) == f"{tmp_path / expected}"


def test_task_paths_start_at_the_task_file_folder(tmp_path: Path) -> None:
    file = tmp_path / "sub" / "tasks.jsonl"
    file.parent.mkdir()
    file.write_text('\n{"name": "a", "loop": "p/loop.toml", "workspace": "w", "goal": "g"}\n\n')
    (task,) = load_tasks(file)
    assert task.loop == str(tmp_path / "sub" / "p" / "loop.toml")
    assert task.workspace == str(tmp_path / "sub" / "w")
    assert task.goal == "g"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"workers": 0}, "workers"), ({"workers": 65}, "workers"), ({"backend": "k8s"}, "backend")],
)
def test_bad_batch_arguments_are_configuration_errors(kwargs: dict, field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        Batch([{"name": "a"}], Loops(Path("."), {}), **kwargs)


def test_the_report_renders_every_task_as_text_and_html(tmp_path: Path) -> None:
    records = [
        TaskRecord(name="fix-1", status="passed", stop_reason="PASSED", rounds=2, score=8.5,
                   prompt_tokens=1000, completion_tokens=500, cost_usd=0.25, seconds=3.0,
                   branch="harness/fix-1-abc"),
        TaskRecord(name="fix-<2>", status="escalated", stop_reason="NO_PROGRESS", rounds=3),
    ]  # fmt: skip
    summary = BatchSummary.of(
        records, not_started=["fix-3"], wall_seconds=4, workers=2, backend="local"
    )
    text = render_batch_text(summary)
    assert "3 tasks" in text
    assert "pass rate 33%" in text
    row = next(line for line in text.splitlines() if line.startswith("fix-1 "))
    assert row.split() == [
        "fix-1",
        "passed",
        "PASSED",
        "2",
        "8.5",
        "1.5k",
        "$0.250",
        "00:03",
        "harness/fix-1-abc",
    ]
    assert any(line.startswith("fix-3") and "not started" in line for line in text.splitlines())
    html = render_batch_html(summary)
    assert "fix-&lt;2&gt;" in html
    assert "fix-<2>" not in html
    assert html.count("<tr>") == 4  # header + three tasks
    assert "<script" not in html
    assert json.loads(summary.model_dump_json())["totals"]["tokens"] == 1500


def test_a_rate_limit_is_shared_by_every_worker_of_the_batch(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "hi\n"})
    starts: list[float] = []
    lock = threading.Lock()

    def timed(entry: object):
        def reply(messages: object, tools: object) -> object:
            with lock:
                starts.append(time.monotonic())
            return entry

        return reply

    def loop_for(task: BatchTask, run: TaskRun) -> OuterLoop:
        model = ScriptedModel(
            [timed(ToolCall("write_file", {"path": "out.txt", "content": "yes"})), timed("done")],
            name="limited-model",
        )
        return OuterLoop(
            "out.txt says yes", Agent(model), gates=[CommandGate("grep -qx yes out.txt")],
            workspace=repo, progress=run.progress, max_iterations=1, run_id=run.run_id, name=task.name,
        )  # fmt: skip

    summary = Batch(
        [{"name": f"t{i}"} for i in range(4)], loop_for, workers=4, out=tmp_path / "out",
        rate_limits={"limited-model": 300},  # one call every 0.2 s
    ).run()  # fmt: skip
    assert summary.counts == {"passed": 4}
    assert len(starts) == 8
    starts.sort()
    assert starts[-1] - starts[0] >= 7 * 0.2 - 0.05  # eight calls, seven shared intervals
    gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    assert min(gaps) >= 0.1  # no two calls together (the rest is the calls' own jitter)


def test_a_rate_limit_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="rate_limits.m"):
        Batch([{"name": "a"}], Loops(tmp_path, {}), rate_limits={"m": 0})


def test_a_second_batch_on_the_same_output_folder_is_refused(tmp_path: Path) -> None:
    from harness.memory.lock import LockHeld, LoopLock

    out = tmp_path / "out"
    loops = Loops(tmp_path, {"a": "yes"})
    with LoopLock(out / "summary.json"), pytest.raises(LockHeld, match="summary.json.lock"):
        Batch([{"name": "a"}], loops, out=out).run()
    assert loops.built == []
    assert not (out / "tasks").exists()
