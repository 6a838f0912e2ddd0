"""The run's one verification checkout: reused round after round, never carrying a leftover."""

from __future__ import annotations

import os
from pathlib import Path

from harness.memory.lock import LoopLock
from harness.workspace.checkout import abandoned_checkouts, parked_checkouts, remove_unheld
from harness.workspace.git import open_workspace
from tests.conftest import git, make_repo
from tests.workspace.test_checkout import files

BASE = {
    "calc.py": "def add(a, b):\n    return a - b\n",
    "pkg/__init__.py": "",
    "pkg/util.py": "VALUE = 1\n",
    "tests/test_calc.py": "from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    ".gitignore": "build/\n*.log\n",
    **{f"vendor/f{n}.txt": f"{n}\n" for n in range(20)},
}


def test_rounds_reuse_one_folder_and_rewrite_only_what_changed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", BASE)
    workspace = open_workspace(repo, isolation="worktree", loop_name="l", run_id="r1")
    work = workspace.path
    with workspace.clean_checkout((), at_base=True) as base:
        assert files(base) == BASE
        kept = (base / "vendor/f3.txt").stat()
    (work / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (work / "pkg/util.py").unlink()
    (work / "pkg/__init__.py").unlink()  # the whole package folder goes
    (work / "new.py").write_text("NEW = 1\n")
    workspace.commit_round(1, "round 1")

    with workspace.clean_checkout(("tests/**",)) as copy:
        assert copy == base  # the same folder
        expected = {**BASE, "calc.py": "def add(a, b):\n    return a + b\n", "new.py": "NEW = 1\n"}
        del expected["pkg/__init__.py"], expected["pkg/util.py"]
        assert files(copy) == expected
        assert not (copy / "pkg").exists()  # no empty folder left to import as a namespace
        again = (copy / "vendor/f3.txt").stat()
        assert (again.st_ino, again.st_ctime_ns) == (kept.st_ino, kept.st_ctime_ns)  # untouched
    assert workspace.checkout.fresh_checkouts == 1
    workspace.close_checkout()
    assert not base.exists()


def test_what_a_gate_run_left_is_gone_in_the_next_round(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", BASE)
    workspace = open_workspace(repo, isolation="worktree", loop_name="l", run_id="r1")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "util.py").write_text("VALUE = 'planted'\n")
    with workspace.clean_checkout(("tests/**",)) as copy:
        # What round 1's gate run (the repository's own code) leaves behind.
        (copy / "conftest.py").write_text("import os\nos._exit(0)\n")  # untracked
        (copy / "build").mkdir()
        (copy / "build/conftest.py").write_text("ignored\n")  # ignored by .gitignore
        (copy / "run.log").write_text("ignored\n")
        (copy / "__pycache__").mkdir()
        (copy / "__pycache__/calc.cpython-312.pyc").write_bytes(b"stale")
        (copy / "empty").mkdir()  # an empty folder imports as a namespace package
        (copy / "nested/.git").mkdir(parents=True)  # a repository git clean -fdx would keep
        (copy / "nested/conftest.py").write_text("planted\n")
        (copy / ".git").mkdir()  # git's own clean never lists a .git
        (copy / ".git/conftest.py").write_text("planted\n")
        (copy / "tests/.git").write_text("gitdir: /nowhere\n")
        (copy / "vendor/.git/objects").mkdir(parents=True)  # in a tracked folder: git keeps it
        (copy / "calc.py").write_text("def add(a, b):\n    return 3\n")  # tracked, changed
        (copy / "tests/test_calc.py").unlink()  # tracked, removed
        (copy / "vendor/f1.txt").unlink()
        (copy / "vendor/f1.txt").symlink_to(outside / "util.py")  # tracked, now a link
        os.utime(copy / "vendor/f2.txt", (0, 0))  # same content, other stat data
        (copy / "vendor/f4.txt").write_text("4\n")  # same content, written again
        for entry in (copy / "pkg").iterdir():
            entry.unlink()
        (copy / "pkg").rmdir()
        (copy / "pkg").symlink_to(outside)  # a tracked folder replaced by a link out
        (outside / ".git").write_text("not the checkout's\n")  # never removed through the link
    (workspace.path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    workspace.commit_round(1, "round 1")

    with workspace.clean_checkout(("tests/**",)) as copy:
        assert files(copy) == {**BASE, "calc.py": "def add(a, b):\n    return a + b\n"}
        assert {p.name for p in copy.iterdir()} == {
            ".gitignore",
            "calc.py",
            "pkg",
            "tests",
            "vendor",
        }
        assert not (copy / "pkg").is_symlink()
        assert not (copy / "vendor/f1.txt").is_symlink()
        assert not (copy / "vendor/.git").exists()
        assert not (copy / "tests/.git").exists()
    assert (outside / "util.py").read_text() == "VALUE = 'planted'\n"  # nothing written through
    assert (outside / ".git").read_text() == "not the checkout's\n"
    assert workspace.checkout.fresh_checkouts == 1


def test_a_checkout_that_cannot_be_brought_up_to_date_is_made_afresh(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", BASE)
    workspace = open_workspace(repo, isolation="worktree", loop_name="l", run_id="r1")
    with workspace.clean_checkout(()) as copy:
        (copy.parent / "index").write_bytes(b"not an index")  # its own index, broken
        (copy / "left.txt").write_text("leftover\n")
    (workspace.path / "calc.py").write_text("fixed\n")
    with workspace.clean_checkout(()) as copy:
        assert files(copy) == {**BASE, "calc.py": "fixed\n"}
    assert workspace.checkout.fresh_checkouts == 2


def test_a_folder_of_the_repository_as_workspace(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "repo", {"README": "top\n", **{f"app/{k}": v for k, v in BASE.items()}}
    )
    workspace = open_workspace(repo / "app", isolation="worktree", loop_name="l", run_id="r1")
    with workspace.clean_checkout(()) as copy:
        assert copy.name == "app"
        (copy.parent / "stray.py").write_text("left above the workspace\n")
    (workspace.path / "calc.py").write_text("fixed\n")
    git(workspace.path, "status")  # the worktree is a checkout git knows
    with workspace.clean_checkout(()) as copy:
        assert (copy / "calc.py").read_text() == "fixed\n"
        assert sorted(p.name for p in copy.parent.iterdir()) == ["README", "app"]


def test_the_next_run_takes_the_parked_checkout_and_rewrites_only_what_differs(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", BASE)
    first = open_workspace(repo, isolation="worktree", loop_name="l", run_id="r1")
    (first.path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    first.commit_round(1, "round 1")
    with first.clean_checkout(()) as copy:
        (copy / "conftest.py").write_text("import os\nos._exit(0)\n")  # a gate run's leftover
        (copy / "vendor/f2.txt").write_text("changed by a gate\n")
        kept = (copy / "vendor/f3.txt").stat()
    first.close_checkout(park=True)
    pool = first.checkout.pool
    assert pool is not None
    [parked] = [p for p in pool.iterdir()]
    assert not copy.exists()  # moved among the parked ones

    second = open_workspace(repo, isolation="worktree", loop_name="l", run_id="r2")
    (second.path / "new.py").write_text("NEW = 1\n")
    with second.clean_checkout(()) as again:
        assert files(again) == {**BASE, "new.py": "NEW = 1\n"}  # the base, not round 1's fix
        same = (again / "vendor/f3.txt").stat()
        assert (same.st_ino, same.st_ctime_ns) == (kept.st_ino, kept.st_ctime_ns)  # untouched
    assert second.checkout.fresh_checkouts == 0
    assert not parked.exists()
    second.close_checkout()
    assert list(pool.iterdir()) == []


def test_a_parked_checkout_with_a_broken_index_is_replaced_by_a_fresh_one(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", BASE)
    first = open_workspace(repo, isolation="worktree", loop_name="l", run_id="r1")
    with first.clean_checkout(()):
        pass
    first.close_checkout(park=True)
    pool = first.checkout.pool
    assert pool is not None
    [parked] = list(pool.iterdir())
    (parked / "index").write_bytes(b"not an index")
    (parked / "tree/calc.py").write_text("planted\n")

    second = open_workspace(repo, isolation="worktree", loop_name="l", run_id="r2")
    with second.clean_checkout(()) as copy:
        assert files(copy) == BASE
    assert second.checkout.fresh_checkouts == 1
    assert not parked.exists()


def test_a_checkout_someone_holds_is_neither_taken_nor_removed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", BASE)
    first = open_workspace(repo, isolation="worktree", loop_name="l", run_id="r1")
    with first.clean_checkout(()) as copy:
        held = copy.parent
    pool = first.checkout.pool
    assert pool is not None
    assert held.name.startswith("inuse-")
    assert abandoned_checkouts(pool) == []  # its holder lives (this process)
    assert not remove_unheld(held)
    assert held.is_dir()
    first.close_checkout(park=True)
    [parked] = parked_checkouts(pool)
    claim = LoopLock(parked / "holder").acquire()  # another run taking it, this very moment

    second = open_workspace(repo, isolation="worktree", loop_name="l", run_id="r2")
    with second.clean_checkout(()) as again:
        assert again.parent != parked
        assert files(again) == BASE
    assert second.checkout.fresh_checkouts == 1  # it made its own
    assert not remove_unheld(parked)
    assert parked.is_dir()
    claim.release()
    assert remove_unheld(parked)
    assert not parked.exists()
    second.close_checkout()
    assert list(pool.iterdir()) == []
