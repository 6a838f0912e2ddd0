"""Parked worktrees: a passed run's checkout is kept for the next run, which starts clean in it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from harness.workspace.checkout import CHECKOUTS, parked_checkouts
from harness.workspace.git import open_workspace
from harness.workspace.parked import MAX_PARKED, parked_worktrees


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "Repo Owner")
    git(path, "config", "user.email", "owner@example.com")
    (path / "README.md").write_text("# demo\n")
    (path / "src").mkdir()
    (path / "src" / "app.py").write_text("def answer():\n    return 41\n")
    (path / ".gitignore").write_text("*.log\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path


def worktrees(repo: Path) -> Path:
    return repo.parent / ".harness-worktrees" / repo.name


def test_a_parked_worktree_is_taken_by_the_next_run_and_starts_as_a_fresh_one(repo: Path) -> None:
    first = open_workspace(repo, loop_name="one")
    (first.path / "src" / "app.py").write_text("def answer():\n    return 42\n")
    first.commit_round(1, "fix")
    (first.path / "src" / "app.py").write_text("uncommitted\n")  # leftovers of every kind
    (first.path / "notes.txt").write_text("untracked\n")
    (first.path / "debug.log").write_text("ignored\n")
    (first.path / "nested").mkdir()
    git(first.path / "nested", "init", "-q")
    first.finish(park=True)

    assert not first.path.exists()
    [parked] = parked_worktrees(worktrees(repo))
    assert git(parked, "rev-parse", "--abbrev-ref", "HEAD") == "HEAD"  # detached: branch free
    assert git(repo, "rev-parse", str(first.branch)) != git(repo, "rev-parse", "main")
    inode = parked.stat().st_ino

    second = open_workspace(repo, loop_name="two")
    assert second.root is not None
    assert second.root.stat().st_ino == inode
    assert parked_worktrees(worktrees(repo)) == []
    assert git(second.root, "branch", "--show-current") == second.branch
    assert (second.path / "src" / "app.py").read_text() == "def answer():\n    return 41\n"
    assert sorted(os.listdir(second.path)) == [".git", ".gitignore", "README.md", "src"]
    assert git(second.root, "status", "--porcelain", "--ignored") == ""
    listed = git(repo, "worktree", "list", "--porcelain")
    assert f"worktree {second.root}\n" in listed + "\n"
    assert str(parked) not in listed


def test_finish_without_park_removes_the_worktree(repo: Path) -> None:
    ws = open_workspace(repo)
    ws.finish()
    assert not ws.path.exists()
    assert not worktrees(repo).exists()


def test_at_most_max_parked_wait_and_the_rest_are_removed(repo: Path) -> None:
    runs = [open_workspace(repo, loop_name=f"r{n}") for n in range(MAX_PARKED + 1)]
    for ws in runs:
        ws.finish(park=True)
    assert len(parked_worktrees(worktrees(repo))) == MAX_PARKED
    assert all(not ws.path.exists() for ws in runs)
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1 + MAX_PARKED


def test_a_parked_worktree_git_no_longer_knows_is_dropped_and_a_fresh_one_made(
    repo: Path,
) -> None:
    ws = open_workspace(repo)
    ws.finish(park=True)
    [parked] = parked_worktrees(worktrees(repo))
    (parked / ".git").write_text("gitdir: /nowhere\n")  # its link to the repository broken
    git(repo, "worktree", "prune")

    fresh = open_workspace(repo, loop_name="next")
    assert fresh.root is not None
    assert (fresh.root / "README.md").is_file()
    assert git(fresh.root, "branch", "--show-current") == fresh.branch
    assert parked_worktrees(worktrees(repo)) == []
    assert not parked.exists()


def test_a_parked_worktree_pointing_at_another_repository_is_not_used(
    repo: Path, tmp_path: Path
) -> None:
    ws = open_workspace(repo)
    ws.finish(park=True)
    [parked] = parked_worktrees(worktrees(repo))
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    (parked / ".git").unlink()
    (parked / ".git").write_text(f"gitdir: {other / '.git'}\n")

    fresh = open_workspace(repo, loop_name="next")
    assert fresh.root is not None
    assert fresh.root != parked
    assert git(fresh.root, "rev-parse", "--path-format=absolute", "--git-common-dir") == str(
        (repo / ".git").resolve()
    )
    assert not parked.exists()
    assert not (other / "README.md").exists()


def test_with_parking_off_nothing_is_taken_and_nothing_parked(repo: Path) -> None:
    first = open_workspace(repo, loop_name="one")
    with first.clean_checkout(()):
        pass
    first.finish(park=True)
    [parked] = parked_worktrees(worktrees(repo))
    pool = worktrees(repo) / CHECKOUTS
    [parked_checkout] = parked_checkouts(pool)

    second = open_workspace(repo, loop_name="two", park=False)
    assert second.root is not None
    assert second.root.stat().st_ino != parked.stat().st_ino  # a worktree of its own
    with second.clean_checkout(()) as copy:
        assert copy.parent != parked_checkout
    assert second.checkout.fresh_checkouts == 1  # it wrote its own checkout
    assert parked_worktrees(worktrees(repo)) == [parked]
    assert parked_checkouts(pool) == [parked_checkout]
    root = second.root
    second.finish(park=True)

    assert not root.exists()  # removed, not parked
    assert parked_worktrees(worktrees(repo)) == [parked]
    assert parked_checkouts(pool) == [parked_checkout]
    assert sorted(p.name for p in pool.iterdir()) == [parked_checkout.name]
