"""``harness batch`` as a person runs it: a real process, killed for real, then resumed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.cli.test_cli import harness, write_loop
from tests.conftest import git, make_repo

TASKS = 6


def _project(tmp_path: Path, *, gate: str = "sleep 1 && grep -qx yes out.txt") -> Path:
    """A repository with one loop.toml whose every round takes a second (the gate sleeps)."""
    project = make_repo(tmp_path / "project", {"README.md": "hi\n"})
    (project / "script.json").write_text(
        json.dumps(
            [{"name": "write_file", "arguments": {"path": "out.txt", "content": "yes"}}, "done"]
        )
    )
    write_loop(
        project,
        f"""\
        goal = "out.txt says yes"
        model = "scripted:script.json"
        max_iterations = 1
        [critic]
        enabled = false
        [[gates]]
        type = "command"
        name = "says yes"
        cmd = "{gate}"
        """,
    )
    git(project, "add", "-A")
    git(project, "commit", "-qm", "loop")
    lines = [json.dumps({"name": f"task-{i}", "loop": "project/loop.toml"}) for i in range(TASKS)]
    (tmp_path / "tasks.jsonl").write_text("\n".join(lines) + "\n")
    return project


def _failures(out: Path) -> str:
    """Each task that did not pass: its status, stop reason and message."""
    records = [json.loads(p.read_text()) for p in sorted(out.glob("tasks/*/record.json"))]
    return "".join(
        f"\n{r['name']}: {r['status']} ({r['stop_reason']}): {r['message']}"
        for r in records
        if r["status"] != "passed"
    )


def _run_ends(project: Path) -> dict[str, int]:
    """How many times each task's loop ended, from every run's event log."""
    ends: dict[str, int] = {}
    for log in (project / ".harness" / "runs").glob("*/events.jsonl"):
        events = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
        name = next(e["loop_name"] for e in events if e["kind"] == "run_start")
        ends[name] = ends.get(name, 0) + sum(e["kind"] == "run_end" for e in events)
    return ends


def _wait_for_a_running_loop(project: Path) -> None:
    """Until a task's loop has started (its event log exists)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(project.glob(".harness/runs/*/events.jsonl")):
        time.sleep(0.02)


def test_a_batch_killed_midway_resumes_and_every_task_ends_exactly_once(tmp_path: Path) -> None:
    project = _project(tmp_path)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "harness.cli.main", "batch", "tasks.jsonl", "--workers", "2",
               "--out", str(out)]  # fmt: skip
    env = dict(os.environ)
    env.pop("HARNESS_MODEL", None)
    first = subprocess.Popen(command, cwd=tmp_path, env=env, start_new_session=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    deadline = time.monotonic() + 60
    passed_before: set[str] = set()
    while time.monotonic() < deadline and len(passed_before) < 2:
        for record in out.glob("tasks/*/record.json"):
            if json.loads(record.read_text())["status"] == "passed":
                passed_before.add(record.parent.name)
        time.sleep(0.05)
    os.killpg(first.pid, signal.SIGKILL)  # the batch and every process it started
    first.wait()
    assert first.returncode == -signal.SIGKILL
    assert 2 <= len(passed_before) < TASKS
    statuses = {
        p.parent.name: json.loads(p.read_text())["status"] for p in out.glob("tasks/*/record.json")
    }
    assert "running" in statuses.values()  # it really was killed mid-task

    again = harness("batch", "tasks.jsonl", "--workers", "2", "--out", str(out), cwd=tmp_path)
    assert again.returncode == 0, again.stderr + _failures(out)
    summary = json.loads((out / "summary.json").read_text())
    assert [t["name"] for t in summary["tasks"]] == [f"task-{i}" for i in range(TASKS)]
    assert {t["status"] for t in summary["tasks"]} == {"passed"}
    assert summary["pass_rate"] == 1.0
    assert summary["totals"]["tokens"] == sum(
        t["prompt_tokens"] + t["completion_tokens"] for t in summary["tasks"]
    )
    starts = {t["name"]: t["starts"] for t in summary["tasks"]}
    assert all(starts[name] == 1 for name in passed_before)  # none that passed was run again
    assert all(starts[name] == 2 for name, s in statuses.items() if s == "running")
    assert _run_ends(project) == {f"task-{i}": 1 for i in range(TASKS)}
    for task in summary["tasks"]:
        assert git(project, "show", f"{task['branch']}:out.txt") == "yes"
    assert "6/6 done" in again.stderr

    third = harness("batch", "tasks.jsonl", "--out", str(out), cwd=tmp_path)
    assert third.returncode == 0
    assert _run_ends(project) == {f"task-{i}": 1 for i in range(TASKS)}


def test_report_renders_a_batch_and_a_failing_batch_exits_3(tmp_path: Path) -> None:
    _project(tmp_path, gate="grep -qx no out.txt")
    out = tmp_path / "out"
    result = harness(
        "batch", "tasks.jsonl", "--workers", "3", "--out", str(out), "--quiet", cwd=tmp_path
    )
    assert result.returncode == 3, result.stderr
    assert "pass rate 0%" in result.stdout
    assert result.stderr == ""
    report = harness("report", str(out), "--html", str(tmp_path / "batch.html"), cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    rows = [line for line in report.stdout.splitlines() if line.startswith("task-")]
    assert len(rows) == TASKS
    assert all("escalated" in row and "MAX_ITERATIONS" in row for row in rows)
    assert (tmp_path / "batch.html").read_text().count('<td class="fail">escalated</td>') == TASKS


def test_a_bad_task_file_exits_2_naming_line_and_field(tmp_path: Path) -> None:
    (tmp_path / "tasks.jsonl").write_text(
        '{"name": "a", "loop": "x"}\n{"name": "b", "max_iterations": "lots"}\n'
    )
    result = harness("batch", "tasks.jsonl", cwd=tmp_path)
    assert result.returncode == 2
    assert "tasks.jsonl:2: field 'max_iterations'" in result.stderr


def test_a_task_file_not_utf8_or_nested_too_deeply_exits_2(tmp_path: Path) -> None:
    (tmp_path / "latin1.jsonl").write_bytes(b'{"name": "caf\xe9", "loop": "x"}\n')
    (tmp_path / "nested.jsonl").write_bytes(b"[" * 100_000 + b"]" * 100_000 + b"\n")
    latin1 = harness("batch", "latin1.jsonl", cwd=tmp_path)
    nested = harness("batch", "nested.jsonl", cwd=tmp_path)
    assert (latin1.returncode, nested.returncode) == (2, 2)
    assert "latin1.jsonl: not UTF-8 text (byte 13 is 0xe9)" in latin1.stderr
    assert "nested.jsonl:1: nested too deeply to read" in nested.stderr
    assert "Traceback" not in latin1.stderr + nested.stderr


def test_an_interrupt_lets_the_running_task_end_and_starts_no_other(tmp_path: Path) -> None:
    _project(tmp_path)
    out = tmp_path / "out"
    env = dict(os.environ)
    env.pop("HARNESS_MODEL", None)
    batch = subprocess.Popen(
        [sys.executable, "-m", "harness.cli.main", "batch", "tasks.jsonl", "--workers", "1",
         "--out", str(out)],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    first = out / "tasks" / "task-0" / "record.json"
    _wait_for_a_running_loop(tmp_path / "project")
    batch.send_signal(signal.SIGINT)  # as Ctrl-C does, while task-0's loop runs
    stdout, stderr = batch.communicate(timeout=60)
    assert batch.returncode == 3, stderr
    assert "stopping: waiting for the running tasks" in stderr
    assert json.loads(first.read_text())["status"] == "passed"  # it ended and was recorded
    assert sorted(p.parent.name for p in out.glob("tasks/*/record.json")) == ["task-0"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["not_started"] == [f"task-{i}" for i in range(1, TASKS)]
    assert "pass rate 17%" in stdout

    again = harness("batch", "tasks.jsonl", "--workers", "3", "--out", str(out), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    final = json.loads((out / "summary.json").read_text())
    assert [(t["name"], t["status"], t["starts"]) for t in final["tasks"]] == [
        (f"task-{i}", "passed", 1) for i in range(TASKS)
    ]


def test_a_second_interrupt_quits_at_once_and_the_task_resumes_next_time(tmp_path: Path) -> None:
    project = _project(tmp_path, gate="sleep 3 && grep -qx yes out.txt")
    out = tmp_path / "out"
    env = dict(os.environ)
    env.pop("HARNESS_MODEL", None)
    batch = subprocess.Popen(
        [sys.executable, "-m", "harness.cli.main", "batch", "tasks.jsonl", "--workers", "1",
         "--out", str(out)],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    first = out / "tasks" / "task-0" / "record.json"
    _wait_for_a_running_loop(tmp_path / "project")
    batch.send_signal(signal.SIGINT)
    time.sleep(0.3)
    batch.send_signal(signal.SIGINT)
    _, stderr = batch.communicate(timeout=60)
    kinds = [
        json.loads(line)["kind"]
        for log in (project / ".harness" / "runs").glob("*/events.jsonl")
        for line in log.read_text().splitlines()
        if line.strip()
    ]
    assert "run_start" in kinds
    assert "gate_report" not in kinds  # it quit without waiting for the 3-second gate
    assert batch.returncode == 3, stderr
    assert "harness: interrupted" in stderr
    assert json.loads(first.read_text())["status"] == "running"

    again = harness("batch", "tasks.jsonl", "--workers", "3", "--out", str(out), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    final = json.loads((out / "summary.json").read_text())
    assert final["tasks"][0]["starts"] == 2
    assert {t["status"] for t in final["tasks"]} == {"passed"}
    assert _run_ends(project) == {f"task-{i}": 1 for i in range(TASKS)}


def test_the_batch_html_report_links_each_task_s_own_report(tmp_path: Path) -> None:
    _project(tmp_path, gate="grep -qx yes out.txt")
    lines = (tmp_path / "tasks.jsonl").read_text().splitlines()[:2]
    (tmp_path / "tasks.jsonl").write_text("\n".join(lines) + "\n")
    batch = harness("batch", "tasks.jsonl", "--out", "out", "--quiet", cwd=tmp_path)
    assert batch.returncode == 0, batch.stdout + batch.stderr
    records = {r: json.loads((tmp_path / "out" / "tasks" / r / "record.json").read_text())
               for r in ("task-0", "task-1")}  # fmt: skip

    report = harness("report", "out", "--html", "page.html", cwd=tmp_path)

    assert report.returncode == 0, report.stderr
    assert report.stderr == "wrote page.html and 2 task report(s) beside it\n"
    page = (tmp_path / "page.html").read_text()
    for name, record in records.items():
        assert f'<td class=""><a href="page.{name}.html">{name}</a></td>' in page
        task_page = (tmp_path / f"page.{name}.html").read_text()
        assert f"<h1>Run {record['run_id']} " in task_page  # that task's own run
    assert sorted(p.name for p in tmp_path.glob("page*.html")) == [
        "page.html", "page.task-0.html", "page.task-1.html"
    ]  # fmt: skip

    elsewhere = tmp_path / "elsewhere"  # the runs are not under this root: no links
    elsewhere.mkdir()
    alone = harness("report", str(tmp_path / "out"), "--html", "page.html", cwd=elsewhere)
    assert alone.returncode == 0, alone.stderr
    assert "<a href" not in (elsewhere / "page.html").read_text()
    assert alone.stderr == "wrote page.html and 0 task report(s) beside it\n"

    summary = tmp_path / "out" / "summary.json"  # the summary is data: a name is not a path
    summary.write_text(summary.read_text().replace('"task-1"', '"../task-1"'))
    tampered = harness("report", "out", "--html", "page.html", cwd=tmp_path)
    assert tampered.returncode == 0, tampered.stderr
    assert tampered.stderr == "wrote page.html and 1 task report(s) beside it\n"
    assert not (tmp_path.parent / "task-1.html").exists()
    assert not list(tmp_path.parent.glob("*task-1*"))
