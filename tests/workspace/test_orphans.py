"""What runs parked for a clone that is gone goes with the next run beside it; nothing else."""

from __future__ import annotations

import shutil
from pathlib import Path

from harness.workspace.checkout import CHECKOUTS, parked_checkouts
from harness.workspace.git import open_workspace
from harness.workspace.orphans import orphans
from harness.workspace.parked import PARKED, parked_worktrees
from tests.conftest import git, make_repo


def parked_run(repo: Path) -> tuple[Path, Path]:
    """A run in ``repo`` that used the gates' checkout and parked: its worktree and checkout."""
    ws = open_workspace(repo, loop_name="one")
    with ws.clean_checkout(()):
        pass
    ws.finish(park=True)
    place = repo.parent / ".harness-worktrees" / repo.name
    [worktree] = parked_worktrees(place)
    [checkout] = parked_checkouts(place / CHECKOUTS)
    return worktree, checkout


def test_the_next_run_removes_what_a_deleted_clone_parked_and_follows_no_link(
    tmp_path: Path,
) -> None:
    files = {"README.md": "# demo\n", "src/app.py": "x = 1\n"}
    gone, kept, repo = (make_repo(tmp_path / name, files) for name in ("gone", "kept", "repo"))
    gone_worktree, gone_checkout = parked_run(gone)
    kept_worktree, kept_checkout = parked_run(kept)
    live = open_workspace(gone, loop_name="live", park=False)  # its own worktree, not parked
    assert live.root is not None
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep me\n")
    (outside / PARKED / "victim").mkdir(parents=True)  # as parked, were the link followed
    place = tmp_path / ".harness-worktrees"
    (place / "gone" / PARKED / "link").symlink_to(outside)
    (place / "gone" / CHECKOUTS / "link").symlink_to(outside)
    (place / "ghost").symlink_to(outside)  # no clone named ghost: a link, never entered
    shutil.rmtree(gone)
    assert orphans(tmp_path) == [gone_worktree, gone_checkout]

    fresh = open_workspace(repo, loop_name="two")

    assert fresh.root is not None
    assert fresh.root.is_relative_to(place / "repo")
    assert not gone_worktree.exists()
    assert not gone_checkout.exists()
    assert sorted(p.name for p in (place / "gone" / PARKED).iterdir()) == ["link"]
    assert sorted(p.name for p in (place / "gone" / CHECKOUTS).iterdir()) == ["link"]
    assert live.root.is_dir()  # not parked: left alone
    assert (outside / "precious.txt").read_text() == "keep me\n"
    assert (outside / PARKED / "victim").is_dir()
    assert (place / "ghost").is_symlink()
    assert parked_worktrees(place / "kept") == [kept_worktree]  # its clone is there
    assert parked_checkouts(place / "kept" / CHECKOUTS) == [kept_checkout]
    assert (kept_worktree / "README.md").read_text() == "# demo\n"
    assert str(kept_worktree) in git(kept, "worktree", "list", "--porcelain")
    assert orphans(tmp_path) == []


def test_a_clone_made_again_at_the_same_path_keeps_what_is_parked_for_it(tmp_path: Path) -> None:
    files = {"README.md": "# demo\n"}
    clone = make_repo(tmp_path / "clone", files)
    worktree, checkout = parked_run(clone)
    shutil.rmtree(clone)
    make_repo(tmp_path / "clone", files)  # its own runs check what they take (unpark)
    make_repo(tmp_path / "repo", files)

    assert orphans(tmp_path) == []
    open_workspace(tmp_path / "repo", loop_name="two")
    assert worktree.is_dir()
    assert checkout.is_dir()
