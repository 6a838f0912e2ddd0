"""A temporary folder is held while its process uses it: a folder in use is never swept, one a
killed process left is, and nothing but this user's own folders, reached without a link, is."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from harness.core import held_folders
from harness.core.held_folders import SUFFIX


@pytest.fixture
def tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temporary folder, for this process and the ones it starts."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    monkeypatch.setenv("TMPDIR", str(root))
    return root


def _left_by(tmp: Path, ending: str) -> Path:
    """The folder a process made and then ended with ``ending`` (Python, run after it)."""
    program = f"""\
        import os, signal, sys
        from harness.core import held_folders
        folder = held_folders.make("harness-agent-")
        (folder / "token").write_text("harness-dead-run-token")
        print(folder, flush=True)
        {ending}
    """
    made = subprocess.run([sys.executable, "-c", textwrap.dedent(program)], capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip
    return Path(made.stdout.strip())


def test_a_folder_in_use_is_held_and_its_lock_lies_beside_it(tmp: Path) -> None:
    folder = held_folders.make("harness-home-")
    try:
        assert folder.parent == tmp
        assert folder.name.startswith("harness-home-")
        assert oct(folder.stat().st_mode & 0o777) == "0o700"
        assert sorted(p.name for p in tmp.iterdir()) == [folder.name, folder.name + SUFFIX]
        assert list(folder.iterdir()) == []  # nothing of the lock in the folder
        assert oct((tmp / (folder.name + SUFFIX)).stat().st_mode & 0o777) == "0o600"
        assert held_folders.sweep() == []
        assert held_folders.sweep(tmp, dry_run=True) == []
        assert folder.is_dir()
    finally:
        held_folders.remove(folder)
    assert list(tmp.iterdir()) == []  # the folder and its lock file gone


@pytest.mark.parametrize(
    "ending", ["os.kill(os.getpid(), signal.SIGKILL)", "os._exit(0)"], ids=["killed", "exited"]
)
def test_a_folder_its_process_left_is_swept(tmp: Path, ending: str) -> None:
    folder = _left_by(tmp, ending)
    assert (folder / "token").is_file()
    assert held_folders.sweep(dry_run=True) == [folder]
    assert folder.is_dir()  # a dry run removes nothing
    assert held_folders.sweep() == [folder]
    assert list(tmp.iterdir()) == []
    assert held_folders.sweep() == []


def _fails_unless_ignored(path: Path, ignore_errors: bool = False) -> None:
    """A removal that fails: it raises unless told to ignore its errors."""
    if not ignore_errors:
        raise OSError(f"cannot remove {path}")


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_folder_given_up_keeps_no_descriptor_open(tmp: Path) -> None:
    before = _open_descriptors()
    held_folders.remove(held_folders.make("harness-agent-"))
    assert _open_descriptors() == before


def test_a_lock_that_cannot_be_put_in_place_is_an_error_and_keeps_nothing_open(
    tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(source: object, target: object) -> None:
        raise PermissionError(f"cannot rename to {target}")

    before = _open_descriptors()
    monkeypatch.setattr(held_folders.os, "rename", refused)
    with pytest.raises(PermissionError, match="cannot rename"):
        held_folders.make("harness-agent-")
    assert _open_descriptors() == before


def test_what_cannot_be_removed_stays_held_until_its_process_ends(
    tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = held_folders.make("harness-agent-")
    with monkeypatch.context() as patch:  # a removal that fails (a file still being written)
        patch.setattr(held_folders.shutil, "rmtree", _fails_unless_ignored)
        held_folders.remove(folder)
    assert folder.is_dir()
    assert (tmp / (folder.name + SUFFIX)).is_file()
    assert held_folders.sweep() == []  # still this live process's
    held_folders.remove(folder)
    assert list(tmp.iterdir()) == []


def test_only_this_users_real_folders_are_swept(tmp: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep").write_text("mine")
    # a lock file left free whose folder is a link: the link's target is not touched
    (tmp / "harness-agent-link").symlink_to(elsewhere)
    (tmp / f"harness-agent-link{SUFFIX}").write_text("")
    # a lock file that is a link itself
    (tmp / "harness-agent-other").mkdir()
    (tmp / f"harness-agent-other{SUFFIX}").symlink_to(elsewhere / "keep")
    # a lock being made (its hidden name): never taken for a free one
    (tmp / "harness-agent-new").mkdir()
    (tmp / f".harness-agent-new{SUFFIX}").write_text("")
    # a lock file that is not a regular file
    (tmp / "harness-agent-fifo").mkdir()
    os.mkfifo(tmp / f"harness-agent-fifo{SUFFIX}")
    # a folder whose name is not the harness's
    (tmp / "other-x").mkdir()
    (tmp / f"other-x{SUFFIX}").write_text("")

    assert held_folders.sweep() == []

    assert (elsewhere / "keep").read_text() == "mine"
    assert sorted(p.name for p in tmp.iterdir()) == sorted([
        "harness-agent-link", f"harness-agent-link{SUFFIX}", "harness-agent-other",
        f"harness-agent-other{SUFFIX}", "harness-agent-new", f".harness-agent-new{SUFFIX}",
        "harness-agent-fifo", f"harness-agent-fifo{SUFFIX}", "other-x", f"other-x{SUFFIX}",
    ])  # fmt: skip


def test_a_lock_file_whose_folder_is_gone_is_swept(tmp: Path) -> None:
    (tmp / f"harness-agent-gone{SUFFIX}").write_text("")
    assert held_folders.sweep() == [tmp / "harness-agent-gone"]
    assert list(tmp.iterdir()) == []


def test_release_is_once_and_a_folder_not_made_here_is_left_alone(tmp: Path) -> None:
    folder = held_folders.make("harness-agent-")
    held_folders.release(folder)
    held_folders.release(folder)
    assert folder.is_dir()
    assert not (tmp / (folder.name + SUFFIX)).exists()
    assert held_folders.sweep() == []  # given up without a lock: no longer the sweep's
    os.rmdir(folder)
