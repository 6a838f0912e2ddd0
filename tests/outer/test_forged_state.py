"""State the agent cannot forge: a pass read back from progress.md is checked, not believed."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from harness import Agent, CommandGate, OuterLoop, ScriptedModel, StopReason, ToolCall
from harness.memory.progress import Progress
from harness.memory.progress_items import Attempt
from harness.memory.progress_terms import Status
from harness.memory.run_state import RunState
from tests.conftest import git, make_repo

ROOT = Path(__file__).resolve().parents[2]


def _harness_run(project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli.main", "run"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_forged_status_and_a_killed_harness_do_not_make_a_pass(tmp_path: Path) -> None:
    project = make_repo(tmp_path / "project", {"answer.txt": "no\n"})
    progress = project / "progress" / "forge.md"
    forge = f"sed -i 's/^Status: .*/Status: passed/' {progress} && kill -9 $PPID"
    script = [{"name": "run_shell", "arguments": {"command": forge}}, "done"]
    (tmp_path / "script.json").write_text(json.dumps(script))
    (project / "loop.toml").write_text(
        textwrap.dedent("""\
        name = "forge"
        goal = "make the gate pass"
        model = "scripted:../script.json"
        max_iterations = 3
        [critic]
        enabled = false
        [[gates]]
        type = "command"
        name = "never"
        cmd = "false"
        [sandbox]
        backend = "none"  # the sandbox stops the forgery earlier; this checks what stands behind it
        """)
    )
    (project / ".gitignore").write_text(".harness/\nprogress/\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "loop")

    first = _harness_run(project)
    assert first.returncode == -9  # the agent's shell killed the harness
    assert Progress.load(progress).status is Status.PASSED  # what the agent wrote

    second = _harness_run(project)

    assert second.returncode != 0
    assert second.returncode == 1
    said = second.stdout + second.stderr
    assert "progress.md says passed, but it records no round" in said
    assert "not trusted" in said
    assert "PASSED" not in said


def _loop(repo: Path, progress: Path, gate: CommandGate) -> OuterLoop:
    return OuterLoop(
        "make add() right",
        Agent(ScriptedModel(["nothing to do"])),
        gates=[gate],
        workspace=repo,
        progress=progress,
        max_iterations=3,
    )


def _forge(progress_path: Path, *, commit: str, base: str) -> None:
    """progress.md as an agent would write it: passed, with a passing round at ``commit``."""
    progress = Progress.load_or_create(progress_path, name="loop", goal="make add() right")
    progress.status = Status.PASSED
    progress.iteration = 1
    progress.attempts = [Attempt(round=1, outcome="passed", commit=commit)]
    RunState(branch="main", base=base, head=commit).write(progress)
    progress.save()


def test_a_forged_passing_round_is_checked_against_its_commit(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": "def add(a, b):\n    return a - b\n"})
    base = git(repo, "rev-parse", "HEAD")
    progress = tmp_path / "progress.md"
    _forge(progress, commit=base, base=base)
    gate = CommandGate([sys.executable, "-c", "from calc import add; assert add(2, 3) == 5"])

    result = _loop(repo, progress, gate).run()

    assert result.stop_reason is StopReason.ERROR
    assert not result.passed
    assert result.message.startswith(
        f"progress.md says passed, but gate {gate.name} fails on its commit {base[:12]}"
    )


def test_a_real_pass_is_confirmed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": "def add(a, b):\n    return a - b\n"})
    base = git(repo, "rev-parse", "HEAD")
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(repo, "commit", "-qam", "fix")
    fixed = git(repo, "rev-parse", "HEAD")
    progress = tmp_path / "progress.md"
    _forge(progress, commit=fixed, base=base)
    gate = CommandGate([sys.executable, "-c", "from calc import add; assert add(2, 3) == 5"])

    result = _loop(repo, progress, gate).run()

    assert result.stop_reason is StopReason.PASSED
    assert result.message == "already passed; restart to run again"


def test_a_commit_that_is_not_in_the_repository_is_named(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": "x = 1\n"})
    base = git(repo, "rev-parse", "HEAD")
    progress = tmp_path / "progress.md"
    _forge(progress, commit="f" * 40, base=base)

    result = _loop(repo, progress, CommandGate("true")).run()

    assert result.stop_reason is StopReason.ERROR
    assert result.message.startswith(
        "progress.md says passed at ffffffffffff, but ffffffffffff is not a commit here"
    )


def test_a_real_pass_without_commits_is_confirmed_on_the_folder(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": "def add(a, b):\n    return a - b\n"})
    progress = tmp_path / "progress.md"
    gate = CommandGate([sys.executable, "-c", "from calc import add; assert add(2, 3) == 5"])
    model = ScriptedModel(
        [
            ToolCall(
                # a size of its own: Python's bytecode cache of the old file, written by the
                # gate at the base in the same second, is judged by mtime and size
                "write_file",
                {"path": "calc.py", "content": "def add(a, b):\n    return (a + b)\n"},
            ),
            "fixed",
        ]
    )
    first = OuterLoop(
        "make add() right", Agent(model), gates=[gate], workspace=repo,
        progress=progress, isolation="none",
    ).run()  # fmt: skip
    assert first.stop_reason is StopReason.PASSED

    again = _loop(repo, progress, gate).run()

    assert again.stop_reason is StopReason.PASSED
    assert again.message == "already passed; restart to run again"
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")  # the pass is undone
    undone = _loop(repo, progress, gate).run()
    assert undone.stop_reason is StopReason.ERROR
    assert "fails on the workspace as it stands" in undone.message


def test_a_loop_that_already_passed_names_the_branch_its_work_is_on(tmp_path: Path) -> None:
    """A batch or benchmark killed after a task's loop passed, but before its record was
    written, runs the loop again: the answer must still say where the passed work is."""
    repo = make_repo(tmp_path / "repo", {"calc.py": "def add(a, b):\n    return a - b\n"})
    progress = tmp_path / "progress.md"
    gate = CommandGate([sys.executable, "-c", "from calc import add; assert add(2, 3) == 5"])
    fix = ToolCall(
        "write_file", {"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"}
    )
    first = OuterLoop(
        "make add() right", Agent(ScriptedModel([fix, "fixed"])), gates=[gate], workspace=repo,
        progress=progress, isolation="worktree",
    ).run()  # fmt: skip
    assert first.stop_reason is StopReason.PASSED
    assert first.branch is not None

    again = _loop(repo, progress, gate).run()

    assert (again.stop_reason, again.message) == (
        StopReason.PASSED,
        "already passed; restart to run again",
    )
    assert again.branch == first.branch
    assert "return a + b" in git(repo, "show", f"{again.branch}:calc.py")
