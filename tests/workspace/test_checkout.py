"""The clean checkout the gates judge: what a round commit holds, protected paths as at base."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.workspace.git import open_workspace
from tests.conftest import git, make_repo

BASE = {
    "calc.py": "def add(a, b):\n    return a - b\n",
    "tests/test_calc.py": "from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    "conftest.py": "# the project's own\n",
    ".gitignore": "build/\n",
}


def files(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("isolation", ["worktree", "none"])
def test_the_copy_holds_the_round_and_protected_paths_as_at_base(
    tmp_path: Path, isolation: str
) -> None:
    repo = make_repo(tmp_path / "repo", BASE)
    workspace = open_workspace(repo, isolation=isolation, loop_name="l", run_id="r1")  # type: ignore[arg-type]
    work = workspace.path
    (work / "calc.py").write_text("def add(a, b):\n    return a + b\n")  # the fix: kept
    (work / "notes.md").write_text("untracked, not ignored: committed, so kept\n")
    (work / "tests/test_calc.py").write_text("def test_add():\n    pass\n")  # protected: base
    (work / "conftest.py").unlink()  # protected and deleted: back
    (work / "tests/conftest.py").write_text("import os\nos._exit(0)\n")  # new protected: gone
    (work / "build").mkdir()
    (work / "build/conftest.py").write_text("ignored by .gitignore\n")
    (work / "sub").mkdir()
    (work / "sub/conftest.py").write_text("hidden through info/exclude\n")
    exclude = Path(git(work, "rev-parse", "--git-path", "info/exclude"))
    exclude = exclude if exclude.is_absolute() else work / exclude
    exclude.parent.mkdir(parents=True, exist_ok=True)
    exclude.write_text("sub/\n")
    protect = ("tests/**", "**/conftest.py")

    with workspace.clean_checkout(protect) as copy:
        assert copy != work
        assert files(copy) == {
            ".gitignore": "build/\n",
            "calc.py": "def add(a, b):\n    return a + b\n",
            "conftest.py": "# the project's own\n",
            "notes.md": "untracked, not ignored: committed, so kept\n",
            "tests/test_calc.py": BASE["tests/test_calc.py"],
        }
        assert not (copy / ".git").exists()
    assert copy.exists()  # kept for the next round, until the run closes it
    workspace.close_checkout()
    assert not copy.exists()
    assert (work / "tests/conftest.py").exists()  # the agent's folder is left as it was


def test_the_base_copy_ignores_the_round(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", BASE)
    workspace = open_workspace(repo, isolation="worktree", loop_name="l", run_id="r1")
    (workspace.path / "calc.py").write_text("changed\n")

    with workspace.clean_checkout((), at_base=True) as copy:
        assert files(copy) == BASE
    assert workspace.file_at_base("calc.py") == BASE["calc.py"]
    assert workspace.file_at_base("missing.py") is None


def test_a_workspace_folder_inside_the_repository(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "repo", {"README": "top\n", **{f"app/{k}": v for k, v in BASE.items()}}
    )
    workspace = open_workspace(repo / "app", isolation="worktree", loop_name="l", run_id="r1")
    (workspace.path / "tests/test_calc.py").write_text("gamed\n")
    (workspace.path / "calc.py").write_text("fixed\n")

    with workspace.clean_checkout(("tests/**",)) as copy:
        assert copy.name == "app"
        assert (copy / "calc.py").read_text() == "fixed\n"
        assert (copy / "tests/test_calc.py").read_text() == BASE["tests/test_calc.py"]
        assert (copy.parent / "README").read_text() == "top\n"


def test_the_ignored_work_folder_is_delivered_and_nothing_else_ignored_is(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {**BASE, ".gitignore": ".harness/\nbuild/\n"})
    workspace = open_workspace(repo, isolation="none", loop_name="l", run_id="r1")
    (repo / ".harness/work").mkdir(parents=True)
    (repo / ".harness/work/draft.md").write_text("the loop's work product\n")
    (repo / ".harness/work/link").symlink_to("/etc/passwd")
    (repo / ".harness/runs").mkdir()
    (repo / ".harness/runs/events.jsonl").write_text("{}\n")
    (repo / "build").mkdir()
    (repo / "build/conftest.py").write_text("ignored by .gitignore\n")

    with workspace.clean_checkout(()) as copy:
        assert (copy / ".harness/work/draft.md").read_text() == "the loop's work product\n"
        assert (copy / ".harness/work/link").is_symlink()  # copied as a link, not followed
        assert not (copy / ".harness/runs").exists()
        assert not (copy / "build").exists()
    with workspace.clean_checkout((), at_base=True) as base:
        assert not (base / ".harness").exists()


@pytest.mark.parametrize("isolation", ["worktree", "none"])
def test_one_look_at_the_files_gives_the_changes_and_the_judged_tree(
    tmp_path: Path, isolation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(
        tmp_path / "repo", {"README": "top\n", **{f"app/{k}": v for k, v in BASE.items()}}
    )
    workspace = open_workspace(repo / "app", isolation=isolation, loop_name="l", run_id="r1")  # type: ignore[arg-type]
    work = workspace.path
    (work / "calc.py").write_text("fixed\n")
    (work / "notes.md").write_text("untracked: delivered\n")
    (work / "tests/test_calc.py").write_text("gamed\n")  # protected: as at base
    (work / "conftest.py").unlink()  # protected and deleted: back
    (work / "tests/conftest.py").write_text("import os\n")  # new and protected: left out
    assert workspace.root is not None
    (workspace.root / "README").write_text("outside the workspace folder\n")
    protect = ("tests/**", "**/conftest.py")
    trace = tmp_path / "trace.txt"
    monkeypatch.setenv("GIT_TRACE", str(trace))

    delivery = workspace.delivery(protect)

    monkeypatch.delenv("GIT_TRACE")
    traced = trace.read_text(encoding="utf-8")
    assert traced.count("built-in: git add ") == 1  # one look at the files, for all of it
    assert traced.count("built-in: git update-index ") == 1  # protected paths in one pass
    assert sorted(delivery.changed) == sorted(workspace.changed_files())
    assert sorted(delivery.changed) == [
        "calc.py", "conftest.py", "notes.md", "tests/conftest.py", "tests/test_calc.py"
    ]  # fmt: skip
    assert delivery.diff == workspace.diff(max_chars=10**9)
    assert "README" not in delivery.diff
    with workspace.clean_checkout(protect) as looked_again:
        again = files(looked_again.parent)
    with workspace.clean_checkout(protect, tree=delivery.tree) as copy:
        assert files(copy.parent) == again
        assert files(copy) == {
            ".gitignore": "build/\n",
            "calc.py": "fixed\n",
            "conftest.py": BASE["conftest.py"],
            "notes.md": "untracked: delivered\n",
            "tests/test_calc.py": BASE["tests/test_calc.py"],
        }
        assert (copy.parent / "README").read_text() == "outside the workspace folder\n"
    workspace.close_checkout()
    untracked = git(work, "status", "--porcelain").count("??")
    # A run with a branch staged the round's files (its commit would); in place, nothing is.
    assert untracked == (2 if isolation == "none" else 0)
