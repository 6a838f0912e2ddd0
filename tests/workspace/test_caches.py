"""Byte code and tool caches are never a round's change, committed or judged."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.workspace.git import open_workspace
from harness.workspace.workspace import Workspace
from tests.workspace.test_git import git, make_repo

CACHES = (
    "tests/__pycache__/test_app.cpython-311-pytest-8.3.5.pyc",
    "src/__pycache__/app.cpython-311.pyc",
    "src/stray.pyc",
    "src/stray.pyo",
    ".pytest_cache/v/cache/lastfailed",
    "src/.ruff_cache/0.6.0/123",
    ".mypy_cache/3.11/app.meta.json",
    ".aider.tags.cache.v4/cache.db",
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with no ignore rule for caches (its .gitignore names only *.log)."""
    return make_repo(tmp_path / "repo")


def leave_caches(root: Path) -> None:
    for name in CACHES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"\x00cache")


@pytest.mark.parametrize("folder", ["", "src"])
def test_caches_are_not_changes_and_are_not_committed(repo: Path, folder: str) -> None:
    ws = open_workspace(repo / folder if folder else repo)
    assert ws.root is not None
    leave_caches(ws.root)
    (ws.root / "src" / "app.py").write_text("def answer():\n    return 42\n")

    names, diff = _changes(ws)
    sha = ws.commit_round(1, "fix")

    assert names == ["app.py" if folder else "src/app.py"]
    assert "cache" not in diff
    assert git(ws.root, "show", "--name-only", "--format=", str(sha)).split() == ["src/app.py"]
    assert git(ws.root, "ls-files", "--others").split() == sorted(CACHES)  # left, unstaged


def test_a_round_that_only_ran_the_tests_changed_nothing(repo: Path) -> None:
    ws = open_workspace(repo)
    leave_caches(ws.path)

    assert _changes(ws) == ([], "")
    assert ws.commit_round(1, "ran pytest") is None


def test_a_tracked_cache_changed_or_removed_is_not_a_change(repo: Path) -> None:
    (repo / "src" / "old.pyc").write_bytes(b"tracked by mistake")
    git(repo, "add", "-f", "src/old.pyc")
    git(repo, "commit", "-q", "-m", "a tracked cache")
    ws = open_workspace(repo)
    (ws.path / "src" / "old.pyc").write_bytes(b"rewritten by python")

    assert _changes(ws) == ([], "")
    (ws.path / "src" / "old.pyc").unlink()
    assert _changes(ws) == ([], "")


def test_the_clean_checkout_holds_no_cache(repo: Path) -> None:
    ws = open_workspace(repo)
    leave_caches(ws.path)
    (ws.path / "src" / "new.py").write_text("x = 1\n")

    with ws.clean_checkout(()) as checkout:
        files = sorted(
            p.relative_to(checkout).as_posix() for p in checkout.rglob("*") if p.is_file()
        )

    assert files == [".gitignore", "README.md", "src/app.py", "src/new.py"]


def _changes(ws: Workspace) -> tuple[list[str], str]:
    """The paths and diff a round delivers."""
    delivery = ws.delivery(())
    return list(delivery.changed), delivery.diff
