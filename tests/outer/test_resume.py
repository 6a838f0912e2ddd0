"""Loops that outlive their process: resume, a person's edits, one driver at a time."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from harness import Agent, CommandGate, OuterLoop, Progress, ScriptedModel, StopReason, ToolCall
from harness.core.event_schema import EventBase
from tests.conftest import make_repo

ROOT = Path(__file__).resolve().parents[2]


def _write(content: str) -> list[object]:
    return [ToolCall("write_file", {"path": "answer.txt", "content": content}), "done"]


def _loop(workspace: Path, progress: Path, model: ScriptedModel, **kwargs: object) -> OuterLoop:
    return OuterLoop(
        "answer.txt must say yes", Agent(model),
        gates=[CommandGate("grep -qx yes answer.txt", name="says yes")],
        workspace=workspace, progress=progress, **{"patience": 10, **kwargs},
    )  # fmt: skip


def test_a_new_session_resumes_at_the_next_round_with_a_persons_edits(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"answer.txt": "no\n"})
    progress_path = tmp_path / "progress" / "answer.md"
    first = _loop(repo, progress_path, ScriptedModel([*_write("maybe\n")]), max_iterations=1)
    assert first.run().stop_reason is StopReason.MAX_ITERATIONS

    # A person ticks a box, rewrites the resume point and leaves a note between sessions.
    progress = Progress.load(progress_path)
    progress.add_item("look at the spelling")
    progress.save()
    text = progress_path.read_text()
    text = text.replace("- [ ] look at the spelling", "- [x] look at the spelling")
    text = text.replace("## Notes", "## Notes\n\nThe answer is a single lowercase word.")
    text = text.replace("Status: escalated", "Status: in progress")
    text = re.sub(r"(?m)^Resume point:.*$", "Resume point: try the word yes", text)
    progress_path.write_text(text)

    model = ScriptedModel([*_write("yes\n")])
    second = _loop(repo, progress_path, model, max_iterations=3).run()
    assert second.stop_reason is StopReason.PASSED
    assert second.iterations == 2  # round 2, not round 1 again
    task = model.calls[0].messages[1]["content"]
    assert "round 2 of at most 3" in task
    assert "try the word yes" in task
    assert "The answer is a single lowercase word." in task
    assert "- [x] look at the spelling" in task
    assert "Round 1" in task  # the earlier attempt is in context
    # Said once, and the harness's own record of the run (branch, worktree, commits) not at all.
    assert task.count("answer.txt must say yes") == 1
    assert "Branch:" not in task
    assert "Worktree:" not in task
    assert "Head:" not in task
    assert "\nBranch: harness/" in progress_path.read_text()  # the file keeps it for the next run
    final = Progress.load(progress_path)
    assert [a.round for a in final.attempts] == [1, 2]
    assert final.checklist[0].done
    assert "single lowercase word" in final.notes


def test_a_finished_loop_is_not_run_again(tmp_path: Path) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    progress_path = tmp_path / "answer.md"
    done = _loop(workspace, progress_path, ScriptedModel(_write("yes\n")), isolation="none").run()
    assert done.passed
    again = ScriptedModel(_write("no\n"))
    result = _loop(workspace, progress_path, again, isolation="none").run()
    assert result.passed
    assert again.calls == []
    assert result.rounds == []


def test_a_broken_progress_file_names_the_line_and_is_left_alone(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "loop.toml").write_text(
        textwrap.dedent("""\
        name = "answer"
        goal = "x"
        model = "scripted:none.json"
        isolation = "none"
        [[gates]]
        type = "command"
        cmd = "true"
        """)
    )
    (project / "none.json").write_text("[]")
    broken = "# Progress: answer\n\nGoal: x\nStatus: in progress\nRound: abc of 10\n"
    (project / "progress").mkdir()
    (project / "progress" / "answer.md").write_text(broken)
    result = subprocess.run(
        [sys.executable, "-m", "harness.cli.main", "run"], cwd=project, capture_output=True, text=True,
        env=dict(os.environ), timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert "answer.md:5" in result.stderr
    assert (project / "progress" / "answer.md").read_text() == broken


def test_two_concurrent_runs_of_one_loop_exactly_one_runs(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    # The first run holds its lock until the test lets it go, after the second has ended.
    held = "until [ -e release ]; do sleep 0.05; done"
    slow_round = [{"name": "run_shell", "arguments": {"command": held}},
                  {"name": "write_file", "arguments": {"path": "answer.txt", "content": "yes\n"}}, "done"]  # fmt: skip
    (project / "script.json").write_text(json.dumps({"rounds": {"1": slow_round}}))
    (project / "loop.toml").write_text(
        textwrap.dedent("""\
        name = "answer"
        goal = "answer.txt must say yes"
        model = "scripted:script.json"
        isolation = "none"
        [critic]
        enabled = false
        [[gates]]
        type = "command"
        cmd = "grep -qx yes answer.txt"
        """)
    )
    env = dict(os.environ)
    command = [sys.executable, "-m", "harness.cli.main", "run", "--quiet"]
    first = subprocess.Popen(command, cwd=project, env=env, stderr=subprocess.PIPE, text=True)
    lock = project / "progress" / "answer.md.lock"
    deadline = time.monotonic() + 30
    while not (lock.exists() and lock.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    second = subprocess.run(
        command, cwd=project, env=env, capture_output=True, text=True, timeout=60
    )
    (project / "release").touch()
    assert first.wait(timeout=60) == 0
    assert second.returncode == 2
    assert f"pid {first.pid}" in second.stderr
    assert Progress.load(project / "progress" / "answer.md").iteration == 1


def test_restart_sets_the_old_progress_aside_and_starts_at_round_1(tmp_path: Path) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    progress_path = tmp_path / "answer.md"
    assert (
        _loop(workspace, progress_path, ScriptedModel(_write("yes\n")), isolation="none")
        .run()
        .passed
    )
    model = ScriptedModel(_write("yes\n"))
    result = _loop(workspace, progress_path, model, isolation="none", earlier="restart").run()
    assert result.passed
    assert result.iterations == 1
    assert len(model.calls) == 2  # round 1 really ran again
    assert Progress.load(tmp_path / "answer.previous.md").status.value == "passed"
    assert [a.round for a in Progress.load(progress_path).attempts] == [1]


def test_a_resumed_escalation_lists_every_round_and_is_not_repeated_at_the_cap(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    progress_path = tmp_path / "answer.md"
    hooked: list[Path] = []
    first = _loop(workspace, progress_path, ScriptedModel(_write("maybe\n")), isolation="none",
                  max_iterations=1, on_escalate=hooked.append).run()  # fmt: skip
    assert first.stop_reason is StopReason.MAX_ITERATIONS
    second = _loop(workspace, progress_path, ScriptedModel(_write("perhaps\n")), isolation="none",
                   max_iterations=2, on_escalate=hooked.append).run()  # fmt: skip
    assert second.escalation is not None
    report = second.escalation.read_text()
    assert "**Rounds:** 2" in report
    assert "### Round 1: failed: says yes (an earlier session)" in report
    assert "### Round 2: failed: says yes" in report
    again = ScriptedModel(_write("yes\n"))
    third = _loop(workspace, progress_path, again, isolation="none", max_iterations=2,
                  on_escalate=hooked.append).run()  # fmt: skip
    assert third.stop_reason is StopReason.MAX_ITERATIONS
    assert "already escalated" in third.message
    assert third.escalation == second.escalation
    assert again.calls == []
    assert len(hooked) == 2  # the person is not notified again for the same escalation


def test_a_cut_off_session_leaves_progress_as_the_last_completed_round_left_it(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    progress_path = tmp_path / "answer.md"

    def interrupt(messages: object, tools: object) -> str:
        raise KeyboardInterrupt

    model = ScriptedModel([
        ToolCall("update_progress", {"add": ["step one"], "done": ["step one"],
                                     "resume_point": "from a cut-off session"}),
        interrupt,
    ])  # fmt: skip
    result = _loop(workspace, progress_path, model, isolation="none").run()
    assert result.stop_reason is StopReason.CANCELLED
    progress = Progress.load(progress_path)
    assert progress.checklist == []
    assert progress.resume_point == ""
    assert progress.attempts == []


def test_progress_is_read_under_the_lock_not_when_the_loop_was_built(tmp_path: Path) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    progress_path = tmp_path / "answer.md"
    early = _loop(workspace, progress_path, ScriptedModel(_write("no\n")), isolation="none")
    assert (
        _loop(workspace, progress_path, ScriptedModel(_write("yes\n")), isolation="none")
        .run()
        .passed
    )
    result = early.run()  # built before the other run passed
    assert result.passed
    assert result.rounds == []  # it saw the pass instead of replaying round 1
    assert [a.round for a in Progress.load(progress_path).attempts] == [1]


def test_a_pass_is_recorded_with_its_round_so_a_kill_right_after_it_cannot_undo_it(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    progress_path = tmp_path / "answer.md"
    seen: list[str] = []
    loop = _loop(workspace, progress_path, ScriptedModel(_write("yes\n")), isolation="none",
                 events=_StatusProbe(progress_path, seen))  # fmt: skip
    assert loop.run().passed
    assert len(seen) == 1
    assert "Status: passed" in seen[0]  # already saved before any finishing step


class _StatusProbe:
    """Reads progress.md when the round ends, before the run's own finishing steps."""

    def __init__(self, path: Path, seen: list[str]) -> None:
        self.path, self.seen = path, seen

    def emit(self, event: EventBase) -> None:
        if event.kind == "round_end":
            self.seen.append(self.path.read_text())
