"""What one run leaves cannot reach the next: a parked checkout is reused only when it is
provably clean, removal never fails a later run or ``harness clean``, and the Ray ship-back
takes the run's own folder only."""

from __future__ import annotations

import os
import socket
import stat
import time
from pathlib import Path

import pytest

from harness.scale.job import Job, Place, run_folder_of
from harness.scale.ray_backend import pack_files
from harness.workspace.checkout import CHECKOUTS, MAKING_SECONDS
from harness.workspace.git import open_workspace
from harness.workspace.parked import parked_worktrees
from harness.workspace.removal import remove_tree
from tests.cli.test_cli import harness
from tests.cli.test_cli_clean import holding_a_checkout, project
from tests.conftest import make_repo
from tests.workspace.test_parked import git, repo, worktrees

pytestmark = pytest.mark.usefixtures("own_tmpdir")  # `harness clean` sweeps it

__all__ = ["repo"]  # the fixture, shared

DEPTH = 2100
"""Folders nested this deep make a path past PATH_MAX (4096) and past Python's recursion limit."""


def nest(base: Path, depth: int = DEPTH) -> None:
    """``base/d/d/.../d/leaf``, made one folder at a time relative to the last (no long path)."""
    base.mkdir(parents=True, exist_ok=True)
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.close(os.open("leaf", os.O_WRONLY | os.O_CREAT, dir_fd=fd))
    finally:
        os.close(fd)


def parked_with(repo: Path, plant: object) -> Path:
    """A passed run's worktree, with ``plant(worktree)`` done in it before it is parked."""
    first = open_workspace(repo, loop_name="one")
    assert callable(plant)
    plant(first.path)
    first.finish(park=True)
    [parked] = parked_worktrees(worktrees(repo))
    return parked


def fifos(names: list[str]):  # type: ignore[no-untyped-def]
    def plant(path: Path) -> None:
        for name in names:
            (path / name).parent.mkdir(parents=True, exist_ok=True)
            os.mkfifo(path / name)

    return plant


def no_special_files(top: Path) -> bool:
    return all(
        stat.S_ISREG(os.lstat(Path(here, name)).st_mode)
        or stat.S_ISLNK(os.lstat(Path(here, name)).st_mode)
        for here, _folders, files in os.walk(top)
        for name in files
    )


# --- the attacks the examples name ----------------------------------------------------------


def test_fifos_named_like_test_configuration_never_reach_the_next_run(repo: Path) -> None:
    parked = parked_with(repo, fifos(["pytest.ini", "conftest.py", "pyproject.toml"]))

    second = open_workspace(repo, loop_name="two")

    assert second.root is not None
    assert no_special_files(second.path)  # a fresh worktree, the parked one removed
    assert sorted(os.listdir(second.path)) == [".git", ".gitignore", "README.md", "src"]
    assert not parked.exists()
    assert parked_worktrees(worktrees(repo)) == []


def test_a_folder_nested_past_path_max_does_not_fail_the_next_run(repo: Path) -> None:
    parked = parked_with(repo, lambda path: nest(path / "deep"))

    second = open_workspace(repo, loop_name="two")  # raised RecursionError: exit 1

    assert not (second.path / "deep").exists()
    assert git(second.root, "status", "--porcelain", "--ignored") == ""
    assert not parked.exists()


def test_harness_clean_removes_a_parked_worktree_nested_past_path_max(tmp_path: Path) -> None:
    repo = project(tmp_path)
    parked = parked_with(repo, lambda path: nest(path / "deep"))

    cleaned = harness("clean", cwd=repo)

    assert cleaned.returncode == 0, cleaned.stderr
    assert f"tidy: removed parked worktree {parked}" in cleaned.stdout.splitlines()
    assert not parked.exists()


def test_harness_clean_removes_an_in_use_checkout_a_run_killed_before_its_lock_left(
    tmp_path: Path,
) -> None:
    repo = project(tmp_path)
    pool = repo.parent / ".harness-worktrees" / repo.name / CHECKOUTS
    left = pool / "inuse-0badc0de"
    (left / "tree").mkdir(parents=True)
    young = pool / "inuse-12345678"  # being made this very moment: left alone
    young.mkdir()
    old = time.time() - MAKING_SECONDS - 60
    os.utime(left, (old, old))

    cleaned = harness("clean", cwd=repo)

    assert cleaned.returncode == 0, cleaned.stderr
    assert f"tidy: removed abandoned checkout {left}" in cleaned.stdout.splitlines()
    assert not left.exists()
    assert young.is_dir()
    assert str(young) not in cleaned.stdout


def test_the_ray_ship_back_takes_the_runs_own_folder_not_one_an_agent_planted(
    tmp_path: Path,
) -> None:
    copy = tmp_path / "copy"
    own = copy / ".harness" / "runs" / "r1"
    own.mkdir(parents=True)
    (own / "events.jsonl").write_text("{}\n")
    for planted in [
        "src/.harness/runs/r1",
        "a/b/.harness/runs/r1",
        ".harness/runs/x/.harness/runs/r1",
    ]:
        (copy / planted).mkdir(parents=True)
        (copy / planted / "evil.py").write_text("import os\n")
    progress = tmp_path / "progress"
    progress.mkdir()
    place = Place(shipped=tmp_path / "driver", copy=copy)
    job: Job[None] = Job("t", lambda _p: None, loop=str(tmp_path / "driver" / "loop.toml"))

    run_files, _ = pack_files(copy, run_folder_of(job, place, "r1"), progress)

    assert run_files == {".harness/runs/r1/events.jsonl": b"{}\n"}


# --- further attacks ------------------------------------------------------------------------


def test_a_fifo_deep_in_a_subfolder_discards_the_parked_worktree(repo: Path) -> None:
    parked = parked_with(repo, fifos(["src/a/b/conftest.py"]))
    second = open_workspace(repo, loop_name="two")
    assert not parked.exists()
    assert not (second.path / "src" / "a").exists()
    assert no_special_files(second.path)


def test_a_fifo_inside_an_ignored_folder_discards_the_parked_worktree(repo: Path) -> None:
    parked = parked_with(repo, fifos(["logs.log/pytest.ini"]))  # *.log is ignored
    second = open_workspace(repo, loop_name="two")
    assert not parked.exists()
    assert sorted(os.listdir(second.path)) == [".git", ".gitignore", "README.md", "src"]


def test_a_socket_in_a_parked_worktree_discards_it(repo: Path) -> None:
    def plant(path: Path) -> None:
        server = socket.socket(socket.AF_UNIX)
        os.chdir(path)  # a socket's path must be short
        try:
            server.bind("sock")
        finally:
            os.chdir(repo.parent)
            server.close()

    here = Path.cwd()
    try:
        parked = parked_with(repo, plant)
        second = open_workspace(repo, loop_name="two")
    finally:
        os.chdir(here)
    assert not parked.exists()
    assert not (second.path / "sock").exists()


def test_a_fifo_replacing_a_tracked_file_does_not_survive(repo: Path) -> None:
    def plant(path: Path) -> None:
        (path / "README.md").unlink()
        os.mkfifo(path / "README.md")

    parked_with(repo, plant)
    second = open_workspace(repo, loop_name="two")
    assert (second.path / "README.md").read_text() == "# demo\n"
    assert no_special_files(second.path)


def test_a_clean_parked_worktree_is_still_reused(repo: Path) -> None:
    parked = parked_with(repo, lambda path: (path / "notes.txt").write_text("untracked\n"))
    inode = parked.stat().st_ino
    second = open_workspace(repo, loop_name="two")
    assert second.root is not None
    assert second.root.stat().st_ino == inode  # the check does not throw away a clean one
    assert not (second.path / "notes.txt").exists()


def test_a_link_to_a_folder_outside_is_removed_as_a_link_and_its_target_kept(
    repo: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep\n")
    parked_with(repo, lambda path: (path / "out").symlink_to(outside, target_is_directory=True))
    second = open_workspace(repo, loop_name="two")
    assert not os.path.lexists(second.path / "out")
    assert (outside / "keep.txt").read_text() == "keep\n"


def test_removal_of_a_link_never_follows_it(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (target / "a").write_text("a")
    link = tmp_path / "link"
    link.symlink_to(target, target_is_directory=True)
    assert remove_tree(link) is True
    assert not os.path.lexists(link)
    assert (target / "a").read_text() == "a"


def test_removal_of_a_deep_nest_a_fifo_and_nothing_says_gone(tmp_path: Path) -> None:
    nest(tmp_path / "deep")
    os.mkfifo(tmp_path / "deep" / "pipe")
    assert remove_tree(tmp_path / "deep") is True
    assert not (tmp_path / "deep").exists()
    assert remove_tree(tmp_path / "never-there") is True


def test_clean_removes_an_abandoned_checkout_holding_a_deep_nest_and_a_fifo(
    tmp_path: Path,
) -> None:
    repo = project(tmp_path)
    killed, abandoned = holding_a_checkout(repo, "r1")
    nest(abandoned / "tree" / "deep")
    os.mkfifo(abandoned / "tree" / "pytest.ini")
    killed.kill()
    killed.wait()

    cleaned = harness("clean", cwd=repo)

    assert cleaned.returncode == 0, cleaned.stderr
    assert f"tidy: removed abandoned checkout {abandoned}" in cleaned.stdout.splitlines()
    assert not abandoned.exists()


def test_a_parked_entry_that_is_a_link_is_neither_taken_nor_followed_by_clean(
    tmp_path: Path,
) -> None:
    repo = project(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious.txt").write_text("mine\n")
    parked = repo.parent / ".harness-worktrees" / repo.name / ".parked"
    parked.mkdir(parents=True)
    (parked / "0badc0de").symlink_to(elsewhere, target_is_directory=True)

    cleaned = harness("clean", cwd=repo)
    second = open_workspace(repo, loop_name="two")

    assert cleaned.returncode == 0, cleaned.stderr
    assert (elsewhere / "precious.txt").read_text() == "mine\n"
    assert second.root is not None
    assert second.root.resolve() != elsewhere.resolve()


@pytest.mark.parametrize("run_id", ["../r1", "..", "r1/../../x", "", "/etc"])
def test_a_run_id_that_is_not_one_name_ships_no_folder(run_id: str, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    (copy / ".harness" / "runs").mkdir(parents=True)
    (copy / ".harness" / "secret.txt").write_text("s")
    place = Place(shipped=tmp_path / "driver", copy=copy)
    job: Job[None] = Job("t", lambda _p: None, loop=str(tmp_path / "driver" / "loop.toml"))
    assert run_folder_of(job, place, run_id) is None


def test_a_run_folder_reached_through_a_link_ships_nothing(tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    real = tmp_path / "elsewhere" / "runs" / "r1"
    real.mkdir(parents=True)
    (real / "id_rsa").write_text("key")
    (copy / ".harness").mkdir(parents=True)
    (copy / ".harness" / "runs").symlink_to(real.parent, target_is_directory=True)
    progress = tmp_path / "progress"
    progress.mkdir()
    run_files, _ = pack_files(copy, copy / ".harness" / "runs" / "r1", progress)
    assert run_files == {}


def test_a_run_folder_outside_the_copy_ships_nothing(tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    copy.mkdir()
    outside = tmp_path / "outside" / ".harness" / "runs" / "r1"
    outside.mkdir(parents=True)
    (outside / "x").write_text("x")
    progress = tmp_path / "progress"
    progress.mkdir()
    assert pack_files(copy, outside, progress)[0] == {}


def test_a_loop_in_a_subfolder_ships_its_own_run_folder_not_the_tops(tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    own = copy / "app" / ".harness" / "runs" / "r1"
    own.mkdir(parents=True)
    (own / "events.jsonl").write_text("{}\n")
    top = copy / ".harness" / "runs" / "r1"
    top.mkdir(parents=True)
    (top / "planted.txt").write_text("p")
    progress = tmp_path / "progress"
    progress.mkdir()
    place = Place(shipped=tmp_path / "driver", copy=copy)
    job: Job[None] = Job("t", lambda _p: None, loop=str(tmp_path / "driver" / "app" / "loop.toml"))
    run_files, _ = pack_files(copy, run_folder_of(job, place, "r1"), progress)
    assert run_files == {"app/.harness/runs/r1/events.jsonl": b"{}\n"}


def test_a_deep_nest_a_gate_left_in_a_git_folder_of_the_checkout_fails_no_later_round(
    tmp_path: Path,
) -> None:
    """What the repository's code run by a gate leaves in the reused checkout, where git's own
    clean does not reach (a `.git` inside a tracked folder), is removed whatever it holds."""
    repo = make_repo(tmp_path / "repo", {"pkg/a.py": "A = 1\n", "b.py": "B = 1\n"})
    workspace = open_workspace(repo, isolation="worktree", loop_name="l", run_id="r1")
    with workspace.clean_checkout(()) as copy:
        nest(copy / "pkg" / ".git")
        os.mkfifo(copy / "pkg" / ".git" / "pipe")
        nest(copy / ".git")
    (workspace.path / "b.py").write_text("B = 2\n")
    workspace.commit_round(1, "round 1")
    try:
        with workspace.clean_checkout(()) as again:
            assert again == copy  # the same folder, reused
            assert not (again / "pkg" / ".git").exists()
            assert not (again / ".git").exists()
            assert (again / "b.py").read_text() == "B = 2\n"
        workspace.close_checkout()
        assert not copy.exists()
    finally:  # never a nest left for pytest's own clean-up of its temporary folders
        remove_tree(copy)
