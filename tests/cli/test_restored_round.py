"""After ``harness restore`` puts a round that did not pass on a passed run's branch, ``status``
and ``clean`` speak of what the branch holds, not of the pass it no longer holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import Agent, CommandGate, OuterLoop, ScriptedModel, ToolCall
from tests.cli.test_cli import harness
from tests.conftest import git, make_repo

pytestmark = pytest.mark.usefixtures("own_tmpdir")  # `harness clean` sweeps it

LOOP_TOML = """\
name = "essay"
goal = "write the draft"
workspace = "."
progress = "progress/essay.md"
isolation = "worktree"
[[gates]]
type = "command"
name = "draft"
cmd = "test -s work/draft.md"
"""


def write(text: str) -> list[object]:
    return [ToolCall("write_file", {"path": "work/draft.md", "content": text}), "done"]


def test_status_and_clean_follow_a_failing_round_put_back_on_a_passed_branch(
    tmp_path: Path,
) -> None:
    files = {"loop.toml": LOOP_TOML, ".gitignore": "progress/\n"}
    repo = make_repo(tmp_path / "repo", files)
    result = OuterLoop(
        "write the draft",
        Agent(ScriptedModel([*write(""), *write("two\n")])),  # round 1's draft is empty: fails
        gates=[CommandGate("test -s work/draft.md", name="draft")],
        progress=repo / "progress" / "essay.md",
        max_iterations=3,
        workspace=repo,
        isolation="worktree",
        name="essay",
    ).run()
    assert (result.passed, result.iterations) == (True, 2)
    branch = result.branch
    assert branch is not None
    passed_line = "essay: passed, round 2 of 3, 0 open item(s), last: passed"
    assert harness("status", cwd=repo).stdout == passed_line + "\n"

    restored = harness("restore", "--round", "1", cwd=repo)
    assert restored.returncode == 0, restored.stderr
    assert git(repo, "show", f"{branch}:work/draft.md") == ""  # round 1's failing draft
    status = harness("status", cwd=repo)
    assert status.returncode == 0, status.stderr
    assert status.stdout == (
        f"{passed_line}; the run branch holds round 1 (`harness restore`), which did not pass\n"
    )
    dry = harness("clean", "--dry-run", cwd=repo)
    assert (
        f"essay: kept {branch}: it holds round 1 (put back by `harness restore`; it did not "
        "pass) over the passed round 2 (`harness restore --round 2` brings that back" in dry.stdout
    )
    assert "it holds the passed work" not in dry.stdout

    back = harness("restore", "--round", "2", cwd=repo)
    assert back.returncode == 0, back.stderr
    status = harness("status", cwd=repo)
    assert status.stdout == (
        f"{passed_line}; the run branch holds round 2 (`harness restore`), which passed\n"
    )
    dry = harness("clean", "--dry-run", cwd=repo)
    assert f"essay: kept {branch}: it holds the passed work" in dry.stdout

    harness("restore", "--round", "1", cwd=repo)
    git(repo, "merge", "--quiet", "--no-ff", "-m", "take round 2", round_two := f"{branch}~1")
    assert git(repo, "show", f"{round_two}:work/draft.md") == "two"  # round 2's commit
    cleaned = harness("clean", cwd=repo)
    assert cleaned.returncode == 0, cleaned.stderr
    assert f"essay: removed branch {branch}" in cleaned.stdout  # only a failing round was left
    assert branch not in git(repo, "branch", "--list")
