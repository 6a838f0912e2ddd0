"""``harness status``, ``runs`` and ``report`` find the same loops: a loop in a folder below
(``examples/bugfix``) keeps its runs in its own ``.harness/runs``, and all three find them. And
status says what a loop does now: running, or waiting for a person's approval."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from harness.memory.approval import ApprovalRequest
from harness.memory.inbox import Inbox
from harness.memory.lock import LoopLock
from harness.memory.progress import Progress
from harness.memory.progress_terms import Status
from tests.cli.test_cli import harness
from tests.cli.test_cli_conventions import passing_loop

pytestmark = pytest.mark.slow


def test_runs_and_report_find_the_runs_of_loops_below_as_status_finds_the_loops(
    tmp_path: Path,
) -> None:
    passing_loop(tmp_path / "examples" / "hello")
    assert harness("run", "examples/hello", "--quiet", cwd=tmp_path).returncode == 0
    (run,) = (tmp_path / "examples" / "hello" / ".harness" / "runs").iterdir()

    status = harness("status", cwd=tmp_path)
    assert status.stdout.startswith("hello: passed, round 1")
    runs = harness("runs", cwd=tmp_path)
    assert runs.returncode == 0, runs.stderr
    (row,) = runs.stdout.strip().splitlines()[1:]
    assert row.startswith(run.name)
    assert " PASSED " in row
    report = harness("report", run.name, cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert report.stdout.startswith(f"run {run.name} · PASSED · 1/")


def test_runs_at_a_root_of_several_loops_names_each_run_s_loop(tmp_path: Path) -> None:
    for name in ("hello", "hallo"):
        folder = passing_loop(tmp_path / "examples" / name)
        toml = folder / "loop.toml"
        toml.write_text(toml.read_text().replace('name = "hello"', f'name = "{name}"'))
        assert harness("run", f"examples/{name}", "--quiet", cwd=tmp_path).returncode == 0

    both = harness("runs", cwd=tmp_path).stdout.splitlines()
    assert both[0].split() == ["run", "loop", "started", "outcome", "rounds", "cost", "goal"]
    assert sorted(row.split()[1] for row in both[1:]) == ["hallo", "hello"]
    one = harness("runs", "examples/hello", cwd=tmp_path).stdout.splitlines()
    assert one[0].split() == ["run", "started", "outcome", "rounds", "cost", "goal"]  # one loop
    assert len(one) == 2


def test_an_unknown_run_names_every_folder_looked_in(tmp_path: Path) -> None:
    passing_loop(tmp_path / "examples" / "hello")
    assert harness("run", "examples/hello", "--quiet", cwd=tmp_path).returncode == 0
    report = harness("report", "nosuchrun", cwd=tmp_path)
    assert report.returncode == 2
    runs = tmp_path.resolve() / "examples" / "hello" / ".harness" / "runs"
    assert report.stderr == (
        f"harness: run: no run folder or run id 'nosuchrun' (looked in {runs})\n"
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    none = harness("runs", cwd=empty)
    assert none.stdout == "no runs under .harness/runs or the loops under .\n"


def test_status_says_running_while_a_process_holds_the_lock_and_not_after(
    tmp_path: Path,
) -> None:
    passing_loop(tmp_path)
    (tmp_path / "script.json").write_text('["still thinking"]')  # the gate fails: escalated
    assert harness("run", "--quiet", "--max-iterations", "1", cwd=tmp_path).returncode == 3
    progress = tmp_path / "progress" / "hello.md"
    before = harness("status", cwd=tmp_path).stdout
    assert before.startswith("hello: escalated, round 1 of 1")
    with LoopLock(progress):  # as a run of this loop holds it
        running = harness("status", cwd=tmp_path).stdout
    assert running.startswith(
        f"hello: running (pid {os.getpid()} on {socket.gethostname()}), round 1 of 1, "
    )
    assert harness("status", cwd=tmp_path).stdout == before
    gone = subprocess.Popen(["true"])
    gone.wait()  # a run killed while it held the lock leaves its details in the file
    lock = progress.with_name(progress.name + ".lock")
    lock.write_text(json.dumps({"pid": gone.pid, "host": socket.gethostname()}) + "\n")
    assert harness("status", cwd=tmp_path).stdout == before


def test_status_says_a_loop_waits_for_approval_while_a_request_is_pending(tmp_path: Path) -> None:
    passing_loop(tmp_path)
    assert harness("run", "--quiet", "--max-iterations", "1", cwd=tmp_path).returncode == 0
    progress = tmp_path / "progress" / "hello.md"
    Inbox(progress).ask(ApprovalRequest(loop="hello", round=1, summary="the gates passed"))
    waiting = harness("status", cwd=tmp_path).stdout
    assert waiting.startswith("hello: waiting for approval of round 1 (`harness approve`), round 1")
    Inbox(progress).close()
    assert harness("status", cwd=tmp_path).stdout.startswith("hello: passed, round 1")


def test_status_of_a_running_loop_names_the_round_in_progress(tmp_path: Path) -> None:
    progress = Progress(name="hello", goal="say hello", path=tmp_path / "progress" / "hello.md")
    progress.status = Status.IN_PROGRESS
    progress.max_iterations = 10
    progress.save()
    assert harness("status", str(progress.path), cwd=tmp_path).stdout == (
        "hello: in progress, round 0 of 10, 0 open item(s), last: no rounds yet\n"
    )
    with LoopLock(progress.path):  # as the run playing its first round holds it
        running = harness("status", str(progress.path), cwd=tmp_path).stdout
    assert running == (
        f"hello: running (pid {os.getpid()} on {socket.gethostname()}), round 1 of 10 in "
        "progress, 0 open item(s), last: no rounds yet\n"
    )
    assert "round 0" not in running
