"""The git processes a round starts, counted for real: every ``git`` started (by the harness or
by git itself, which starts its helpers through its exec path) passes through a logging wrapper
(``counting_git``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harness.workspace.git import open_workspace
from harness.workspace.git_cmd import git, status
from tests.conftest import make_repo
from tests.workspace.test_git_hardening import counting_git, listings


@pytest.fixture
def started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The log of every git process from now on: one line of arguments each."""
    return counting_git(tmp_path, monkeypatch)


def subcommands(log: Path) -> list[str]:
    """The subcommand of each git process logged (what follows the ``-c`` options)."""
    found = []
    for line in log.read_text().splitlines():
        words = line.split()
        while words[:1] == ["-c"]:
            words = words[2:]
        found.append(words[0] if words else "")
    return found


def test_a_round_commit_starts_no_housekeeping_and_no_trailer_process(
    tmp_path: Path, started: Path
) -> None:
    repo = make_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    workspace = open_workspace(repo, loop_name="count")
    (workspace.path / "app.py").write_text("x = 2\n")
    started.write_text("")

    sha = workspace.commit_round(1, "harness: round 1: passed (pytest passed)")

    ran = subcommands(started)
    assert "commit" in ran, ran  # the wrapper saw the commit: the count is real
    assert not {"maintenance", "gc", "interpret-trailers"} & set(ran), ran
    assert sha is not None
    message = subprocess.run(["git", "log", "-1", "--format=%B", sha], cwd=workspace.path,
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert message == "harness: round 1: passed (pytest passed)\n\nHarness-Round: 1\n\n"
    trailers = subprocess.run(
        ["git", "log", "-1", "--format=%(trailers:key=Harness-Round,valueonly)", sha],
        cwd=workspace.path, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert trailers.strip() == "1"


def test_the_wrapper_sees_the_processes_git_starts_itself(tmp_path: Path, started: Path) -> None:
    """Without the harness's options git's commit starts its housekeeping: the count above
    would see it."""
    repo = make_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    (repo / "app.py").write_text("x = 2\n")
    started.write_text("")
    subprocess.run(["git", "commit", "-qam", "two", "--trailer", "T: 1"], cwd=repo, check=True)
    assert subcommands(started) == ["commit", "interpret-trailers", "maintenance"]


def test_opening_a_worktree_looks_at_the_users_files_once(tmp_path: Path, started: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    progress = repo / "progress" / "loop.md"
    progress.parent.mkdir()
    progress.write_text("# the harness's own file, uncommitted\n")
    started.write_text("")

    workspace = open_workspace(repo, loop_name="count", own_files=[progress])

    assert workspace.warning is None  # the harness's own file is not the user's change
    assert subcommands(started).count("status") == 1
    (repo / "notes.txt").write_text("the user's own change\n")
    started.write_text("")
    again = open_workspace(repo, loop_name="count", own_files=[progress])
    assert again.warning is not None
    assert "notes.txt" in again.warning
    assert "loop.md" not in again.warning
    assert subcommands(started).count("status") == 1


def test_the_gates_checkout_looks_up_the_base_once(tmp_path: Path, started: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"app.py": "x = 1\n", "pkg/mod.py": "y = 1\n"})
    workspace = open_workspace(repo, loop_name="count")
    (workspace.path / "app.py").write_text("x = 2\n")
    started.write_text("")

    for _ in range(2):  # the baseline, then what the base holds when it failed there
        with workspace.clean_checkout((), at_base=True) as base:
            assert (base / "app.py").read_text() == "x = 1\n"
    delivery = workspace.delivery(())
    with workspace.clean_checkout((), tree=delivery.tree) as round_files:
        assert (round_files / "app.py").read_text() == "x = 2\n"
        assert (round_files / "pkg" / "mod.py").read_text() == "y = 1\n"
    ran = started.read_text().splitlines()
    assert sum("^{tree}" in line for line in ran) == 1, ran
    assert sum(" ls-tree -r -d " in f" {line} " for line in ran) == 1, ran
    workspace.close_checkout()


def test_commands_that_run_no_driver_read_no_config(tmp_path: Path, started: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    for round_number in range(1, 4):  # each write changes the config: nothing is kept between
        started.write_text("")
        git(repo, "config", f"branch.main.harnessRound{round_number}", str(round_number))
        head = git(repo, "rev-parse", "HEAD").strip()
        git(repo, "update-ref", f"refs/harness/count/{round_number}", head)
        git(repo, "ls-tree", "-r", "HEAD")
        assert listings(started) == 0, started.read_text()
        assert len(subcommands(started)) == 4
    started.write_text("")
    status(repo)  # may pass a file through a clean filter: the config is read for it
    assert listings(started) == 1
    assert subcommands(started) == ["config", "status"]
