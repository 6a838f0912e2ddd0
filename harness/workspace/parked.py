"""Worktrees kept for the next run: a passed run's checkout is parked, not deleted.

Writing a worktree (``git worktree add``) and deleting one cost a file operation per file of the
repository, every run. A run that passed parks its worktree instead: the checkout is detached
from the run's branch (which keeps the work) and renamed into ``<worktrees folder>/.parked/``.
The next run in the same repository takes a parked worktree (a rename, which only one process
can win), checks its own branch out there with ``--force`` (git writes only the files that
differ, judged by the worktree's own index and its stat data) and removes every file git does
not track (``clean -ffdx``), so it starts exactly as a fresh worktree would. It is reused only
when that leaves it provably clean: a FIFO, a socket or a device (which ``git clean`` passes
over), or a folder that cannot be emptied, and it is removed instead, the run taking a fresh
worktree. At most
:data:`MAX_PARKED` worktrees wait per repository; ``harness clean`` removes them.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from harness.workspace.git_cmd import GitIsolationError, git, run_git
from harness.workspace.removal import remove_tree

PARKED = ".parked"
"""The folder, among a repository's run worktrees, that holds the parked ones."""

MAX_PARKED = 2
"""Parked worktrees kept per repository; a run finishing beyond that removes its own."""


def parked_worktrees(worktrees: Path) -> list[Path]:
    """The parked worktrees in ``worktrees`` (the folder holding a repository's run worktrees),
    links left out."""
    return real_folders(worktrees / PARKED)


def real_folders(folder: Path) -> list[Path]:
    """The folders in ``folder``, sorted, links left out; none when ``folder`` is a link (never
    followed) or absent."""
    if folder.is_symlink() or not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink())


def park(user_root: Path, worktree: Path) -> bool:
    """Detach ``worktree`` from its branch and move it among the parked ones; False (and
    nothing moved) when :data:`MAX_PARKED` already wait or git refuses."""
    if len(parked_worktrees(worktree.parent)) >= MAX_PARKED:
        return False
    if run_git(worktree, ("checkout", "--detach", "--quiet"), None).returncode != 0:
        return False
    place = worktree.parent / PARKED
    place.mkdir(exist_ok=True)
    target = place / secrets.token_hex(4)
    try:
        os.rename(worktree, target)
    except OSError:
        return False
    git(user_root, "worktree", "repair", str(target))  # git's record and the .git file
    return True


def unpark(user_root: Path, target: Path, branch: str) -> Path | None:
    """A parked worktree moved to ``target`` with ``branch`` checked out and nothing else in it;
    None when none waits (or none could be brought there: each one that failed is removed)."""
    for parked in parked_worktrees(target.parent):
        try:
            os.rename(parked, target)  # the claim: another process's rename of it fails
        except OSError:
            continue
        try:
            git(user_root, "worktree", "repair", str(target))
            if _common_dir(target) != _common_dir(user_root):
                raise GitIsolationError(f"{target} is no longer a worktree of {user_root}")
            git(target, "checkout", "--force", "--quiet", branch)
            git(target, "clean", "-ffdxq")
            odd = special_file(target)
            if odd is not None:
                raise GitIsolationError(f"{odd} is no file git wrote (git clean leaves it)")
        except (GitIsolationError, OSError, RecursionError):
            remove(user_root, target)
            continue
        return target
    return None


def remove(user_root: Path, worktree: Path) -> None:
    """Remove a worktree git may or may not still know, files and records alike, whatever the
    run left in it (:func:`~harness.workspace.removal.remove_tree`); raises nothing (one left
    behind is never taken again: :func:`unpark` checks each)."""
    run_git(user_root, ("worktree", "remove", "--force", "--force", str(worktree)), None)
    remove_tree(worktree)  # git refuses one it cannot empty (a folder nested past PATH_MAX)
    run_git(user_root, ("worktree", "prune"), None)


def special_file(top: Path) -> Path | None:
    """The first thing under ``top`` (``.git`` files aside) that is neither a regular file, a
    folder nor a link (a FIFO, a socket, a device), or a folder this process cannot empty;
    None when there is none. Links are not followed."""
    for here, folders, files in os.walk(top):
        if not os.access(here, os.W_OK | os.X_OK):
            return Path(here)
        folders[:] = [name for name in folders if name != ".git"]
        for name in files:
            mode = os.lstat(os.path.join(here, name)).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
                return Path(here, name)
    return None


def _common_dir(checkout: Path) -> str:
    """The repository folder ``checkout`` uses (its ``.git`` file is the agent's to write)."""
    return git(checkout, "rev-parse", "--path-format=absolute", "--git-common-dir").strip()
