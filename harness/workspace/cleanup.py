"""Removing what finished and abandoned runs left in a repository: worktrees and run branches.

Only branches a harness run of the loop made are ever touched: ``harness/<loop stem>-<8 hex>``
(the stem ending with the loop's own digest) with the ``branch.<name>.harnessBase`` key and the
``branch.<name>.harnessLoop`` key naming that loop, both set by :mod:`harness.workspace.git`;
never a branch checked out in the user's own checkout. Deciding which runs are finished or abandoned is the caller's job.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from pathlib import Path

from harness.workspace.checkout import remove_unheld
from harness.workspace.git import BRANCH_PREFIX, PART, loop_identity, ref_stem
from harness.workspace.git_cmd import checkouts, config_get, git, run_git
from harness.workspace.parked import PARKED, remove
from harness.workspace.removal import remove_tree
from harness.workspace.round_refs import drop_rounds
from harness.workspace.workspace import WORKTREES_FOLDER, tidy_place


@dataclass(frozen=True)
class RunBranch:
    """A run's branch and the worktree it is checked out in, if any."""

    branch: str
    worktree: Path | None = None


def top_of(path: Path) -> Path | None:
    """The top of the git checkout holding ``path``, or None outside git."""
    proc = run_git(path, ("rev-parse", "--show-toplevel"), None)
    return Path(proc.stdout.strip()).resolve() if proc.returncode == 0 else None


def run_branches(repo: Path, loop_name: str, loop_key: Path) -> list[RunBranch]:
    """The branches harness runs of the loop ``loop_name`` keyed ``loop_key`` (its progress
    file) made in ``repo``, with their worktrees."""
    stem = ref_stem(loop_name, loop_key)
    owner = loop_identity(loop_key)
    pattern = re.compile(re.escape(f"{BRANCH_PREFIX}{stem}{PART}") + r"[0-9a-f]{8}")
    refs = git(repo, "for-each-ref", "--format=%(refname:short)", f"refs/heads/{BRANCH_PREFIX}")
    held = checkouts(repo)
    found = []
    for branch in refs.split():
        if not pattern.fullmatch(branch):
            continue
        if config_get(repo, f"branch.{branch}.harnessBase") is None:
            continue  # named like a run branch, but not made by a run: the user's
        if config_get(repo, f"branch.{branch}.harnessLoop") != owner:
            continue  # not provably this loop's
        found.append(RunBranch(branch, held.get(f"refs/heads/{branch}")))
    return found


PASSED_ROUND = re.compile(r"harness: round \d+: passed \(")
"""The subject of a round commit that passed (``harness.outer.decision.commit_message``)."""


def unmerged_pass(repo: Path, branch: str) -> str | None:
    """The newest commit of ``branch`` whose round passed, unless a branch of the user's (any
    outside ``harness/``) already holds it; None when there is no such commit."""
    base = config_get(repo, f"branch.{branch}.harnessBase")
    span = f"{base}..{branch}" if base else branch
    log = git(repo, "log", "--format=%H %s", span, "--")
    commits = (line.partition(" ") for line in log.splitlines())
    passed = next((sha for sha, _, subject in commits if PASSED_ROUND.match(subject)), None)
    if passed is None:
        return None
    holders = git(repo, "for-each-ref", "--contains", passed, "--format=%(refname:short)",
                  "refs/heads/")  # fmt: skip
    merged = any(not ref.startswith(BRANCH_PREFIX) for ref in holders.split())
    return None if merged else passed


def remove_worktree(repo: Path, worktree: Path) -> None:
    """Remove a run's worktree (never ``repo``'s own checkout) and tidy the empty folders."""
    if worktree.resolve() == repo.resolve():
        raise ValueError(f"{worktree} is the repository's own checkout, not a run's worktree")
    remove(repo, worktree)
    if worktree.parent.name == PARKED:
        with contextlib.suppress(OSError):
            worktree.parent.rmdir()
        tidy_place(worktree.parent.parent)
    else:
        tidy_place(worktree.parent)


def remove_branch(repo: Path, branch: str) -> None:
    """Delete a run branch (its ``branch.<name>.*`` keys and its round refs go with it)."""
    git(repo, "branch", "-D", "--quiet", branch)
    drop_rounds(repo, branch)


def stray_worktree_folders(repo: Path, loop_name: str, loop_key: Path) -> list[Path]:
    """Folders in the default worktree place named like this loop's runs that git does not know.

    A run killed while git was adding its worktree can leave one; it would block nothing but
    it is debris.
    """
    parent = place_of(repo)
    if not parent.is_dir():
        return []
    known = {path.resolve() for path in _registered(repo)}  # a branch's checkout among them
    pattern = re.compile(re.escape(f"{ref_stem(loop_name, loop_key)}{PART}") + r"[0-9a-f]{8}")
    return [
        folder
        for folder in sorted(parent.iterdir())
        if folder.is_dir() and pattern.fullmatch(folder.name) and folder.resolve() not in known
    ]


def remove_checkout(folder: Path) -> bool:
    """Remove a parked or abandoned checkout unless a run holds it by now; whether it went."""
    if not remove_unheld(folder):
        return False
    with contextlib.suppress(OSError):
        folder.parent.rmdir()
    tidy_place(folder.parent.parent)
    return True


def place_of(repo: Path) -> Path:
    """``repo``'s default worktree place, where its runs' worktrees and checkouts are."""
    return repo.parent / WORKTREES_FOLDER / repo.name


def remove_folder(folder: Path) -> None:
    remove_tree(folder)
    tidy_place(folder.parent)


def _registered(repo: Path) -> list[Path]:
    listing = git(repo, "worktree", "list", "--porcelain").splitlines()
    return [
        Path(line.removeprefix("worktree ")) for line in listing if line.startswith("worktree ")
    ]
