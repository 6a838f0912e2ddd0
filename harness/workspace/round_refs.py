"""Every round of a git run kept for good: a ref per round, and the files a person changed since.

Round ``N`` of run branch ``harness/<leaf>`` is kept as ``refs/harness/rounds/<leaf>/<N>``,
pointing at the commit that holds the round's files (its own commit, or the one before when the
round changed nothing). A later round that replaces it, or a rollback of a failed round, moves the
branch but not the ref, so every round can still be looked at (``git diff``) and brought back.
Deleting the run branch with ``harness clean`` deletes its round refs too.
"""

from __future__ import annotations

from pathlib import Path

from harness.workspace.caches import CACHE_EXCLUDES
from harness.workspace.git_cmd import (
    IDENTITY_ENV,
    GitIsolationError,
    checkouts,
    config_get,
    git,
    rev_parse,
)

ROUNDS_PREFIX = "refs/harness/rounds/"


def rounds_prefix(branch: str) -> str:
    """Where the refs that keep the rounds of run branch ``branch`` live."""
    return f"{ROUNDS_PREFIX}{branch.removeprefix('harness/')}/"


def round_ref(branch: str, number: int) -> str:
    """The ref that keeps round ``number`` of run branch ``branch``."""
    return f"{rounds_prefix(branch)}{number}"


def keep_round(root: Path, branch: str, number: int, commit: str) -> None:
    """Point round ``number``'s ref at ``commit``."""
    git(
        root, "update-ref", "-m", f"harness: keep round {number}", round_ref(branch, number), commit
    )


def kept_round(root: Path, branch: str, number: int) -> str | None:
    """The commit that keeps round ``number``, or None when none was kept."""
    return rev_parse(root, round_ref(branch, number))


def drop_rounds(root: Path, branch: str) -> None:
    """Delete every round ref of ``branch`` (the branch is going away)."""
    refs = git(root, "for-each-ref", "--format=%(refname)", rounds_prefix(branch)).split()
    for ref in refs:
        git(root, "update-ref", "-d", ref)


def round_diff(root: Path, branch: str, first: int, second: int) -> str:
    """The diff from round ``first``'s files to round ``second``'s."""
    shas = [kept_round(root, branch, n) for n in (first, second)]
    missing = [n for n, sha in zip((first, second), shas, strict=True) if sha is None]
    if missing:
        raise GitIsolationError(f"round {missing[0]} of {branch} was not kept in {root}")
    return git(root, "diff", "--no-color", "--find-renames", *(s for s in shas if s))


def run_diff(root: Path, branch: str) -> str | None:
    """What run branch ``branch`` holds against the commit its run started from (the
    ``branch.<name>.harnessBase`` the run set); None when ``root`` has no such run branch."""
    base = config_get(root, f"branch.{branch}.harnessBase")
    ref = f"refs/heads/{branch}"
    if base is None or rev_parse(root, ref) is None:
        return None
    return git(root, "diff", "--no-color", "--find-renames", base, ref, "--")


def uncommitted(workspace: Path) -> list[str]:
    """Paths under ``workspace`` (relative to it) that differ from its last commit: changed,
    removed or new (``.gitignore`` respected, caches left out)."""
    changed = git(workspace, "diff", "HEAD", "--name-only", "-z", "--relative", "--", ".",
                  *CACHE_EXCLUDES)  # fmt: skip
    new = git(workspace, "ls-files", "--others", "--exclude-standard", "-z", "--", ".",
              *CACHE_EXCLUDES)  # fmt: skip
    return sorted({name for name in (changed + new).split("\0") if name})


def restore_commit(root: Path, branch: str, number: int) -> str:
    """Put round ``number``'s files on top of ``branch`` as a new commit (history kept), in the
    checkout that has the branch checked out, if one does; the new commit's sha.

    Refused when that checkout has uncommitted changes: they would be lost.
    """
    sha = kept_round(root, branch, number)
    if sha is None:
        raise GitIsolationError(f"round {number} of {branch} was not kept in {root}")
    message = f"harness: restore round {number}\n\nHarness-Restored-Round: {number}"
    checkout = checkouts(root).get(f"refs/heads/{branch}")
    if checkout is not None:
        if uncommitted(checkout):
            raise GitIsolationError(
                f"{checkout} has uncommitted changes; commit or discard them, then restore"
            )
        git(checkout, "read-tree", "-u", "--reset", sha)
        if git(checkout, "diff", "--cached", "--name-only", "HEAD").strip():
            git(checkout, "-c", "core.hooksPath=/dev/null", "commit", "--quiet", "--no-gpg-sign",
                "-m", message, env=IDENTITY_ENV)  # fmt: skip
        return git(checkout, "rev-parse", "HEAD").strip()
    tip = git(root, "rev-parse", f"refs/heads/{branch}").strip()
    tree = git(root, "rev-parse", f"{sha}^{{tree}}").strip()
    if tree == git(root, "rev-parse", f"{tip}^{{tree}}").strip():
        return tip
    commit = git(root, "commit-tree", tree, "-p", tip, "-m", message, env=IDENTITY_ENV).strip()
    git(root, "update-ref", f"refs/heads/{branch}", commit, tip)
    return commit
