"""Git isolation: each run works on its own branch, by default in its own worktree.

How a run meets the user's repository:

* ``worktree`` (default): a new branch ``harness/<loop-name>-<8 hex>`` at the user's HEAD
  (the outer loop's: ``harness/<loop-name>-<8 hex of its progress file>-<8 hex>``),
  checked out in ``<repo parent>/.harness-worktrees/<repo name>/<leaf>``. The user's HEAD,
  index and files are never written. Uncommitted user changes are *not* carried over; the
  workspace says so in ``warning``. A detached HEAD is fine (the run starts from that commit),
  but then there is no branch for :meth:`Workspace.merge_ff` to move.
* ``branch``: the branch is created and checked out in the user's own checkout, which must
  be clean (untracked files included, since rounds commit them).
* ``none``: work in place, no commits; ``diff`` is against HEAD when the folder is a git repo.
  ``reset_to`` and ``merge_ff`` are refused there: they would rewrite the user's own files.

The base commit and the user's branch are kept in the repository config as
``branch.<name>.harnessBase`` and ``branch.<name>.harnessOrigin``, so a resumed run diffs
against the right commit; ``git branch -D`` removes them together with the branch.
What a run then does with its :class:`~harness.workspace.workspace.Workspace` (round commits, diffs,
resets, fast-forward) is in :mod:`harness.workspace.workspace`; git itself runs through
:mod:`harness.workspace.git_cmd`.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from hashlib import sha256
from pathlib import Path
from typing import Literal, get_args

from harness.core.errors import ConfigError
from harness.workspace.git_cmd import (
    GitIsolationError,
    branch_exists,
    checkouts,
    claim_branch,
    config_get,
    describe_dirty,
    git,
    rev_parse,
    run_git,
    status,
)
from harness.workspace.orphans import remove_orphans
from harness.workspace.parked import unpark
from harness.workspace.workspace import WORKTREES_FOLDER, Isolation, Workspace

__all__ = [
    "BRANCH_PREFIX",
    "GitIsolationError",
    "Isolation",
    "chosen_isolation",
    "Workspace",
    "open_workspace",
]

BRANCH_PREFIX = "harness/"
_ID_ATTEMPTS = 20


def open_workspace(
    path: str | Path,
    *,
    isolation: Isolation | Literal["auto"] = "worktree",
    loop_name: str = "run",
    run_id: str | None = None,
    worktrees_dir: str | Path | None = None,
    resume_branch: str | None = None,
    own_files: Sequence[Path] = (),
    loop_key: str | Path | None = None,
    start: str | None = None,
    park: bool = True,
) -> Workspace:
    """Prepare where a run works: a fresh branch (worktree or in place), a resumed one, or none.

    ``"auto"`` is ``"worktree"`` in a git repository with at least one commit, else ``"none"``.
    ``run_id`` picks the branch's 8-hex suffix (random without it); ``resume_branch`` reopens
    an earlier run's branch. ``worktrees_dir`` holds the run's worktree instead of
    ``<repo parent>/.harness-worktrees/<repo name>``; it must be outside the repository.
    ``own_files`` are files the harness itself keeps in the checkout (progress.md and its
    companions): uncommitted, they are not the user's changes the ``warning`` tells of.
    ``loop_key`` (the loop's progress file) goes into the branch's name (see :func:`ref_stem`) and
    its ``branch.<name>.harnessLoop`` key, which ``harness clean`` checks before touching it.
    ``start`` (a commit) is where a new branch starts instead of HEAD; such a run started from
    no branch of the user's (its ``origin`` is None). Without ``park`` the run neither takes a
    worktree or checkout an earlier run parked nor parks its own (see :mod:`.parked`).
    """
    if isolation not in (*get_args(Isolation), "auto"):
        raise ConfigError(
            f"isolation must be one of {(*get_args(Isolation), 'auto')}, got {isolation!r}"
        )
    target = Path(path).resolve()
    if not target.is_dir():
        raise ConfigError(f"workspace path {target} does not exist or is not a folder")
    found = _discover(target)
    if isolation == "auto":
        isolation = "worktree" if found is not None and found[2] is not None else "none"
    if isolation == "none":
        for name, given in (("resume_branch", resume_branch), ("start", start)):
            if given is not None:
                raise ConfigError(f"{name} needs isolation='worktree' or 'branch', not 'none'")
        root, _, head = found or (None, None, None)
        return Workspace(target, None, head, "none", root, root, parking=park)
    hint = "set isolation = \"none\" in loop.toml (or isolation='none' in Python) to work in place"
    if found is None:
        raise GitIsolationError(
            f"{target} is not inside a git repository; isolation={isolation!r} needs one "
            f"(run `git init` and make a first commit), or {hint}"
        )
    root, origin, head = found
    if head is None:
        raise GitIsolationError(
            f"the repository at {root} has no commits yet; make a first commit, or {hint}"
        )
    own = tuple(
        str(f.resolve().relative_to(root)) for f in own_files if f.resolve().is_relative_to(root)
    )
    place = _Placement(root, target.relative_to(root), worktrees_dir, isolation, own, park)
    if resume_branch is not None:
        return place.resume(resume_branch)
    if start is not None:
        origin, head = None, rev_parse(root, f"{start}^{{commit}}")
        if head is None:
            raise GitIsolationError(f"the run's start {start!r} is no commit in {root}")
    return place.create(loop_name, run_id, origin, head, loop_key)


def chosen_isolation(path: str | Path, isolation: Isolation | Literal["auto"]) -> Isolation:
    """What ``"auto"`` becomes for ``path`` (a worktree in a git repository with a commit, else
    ``"none"``); any other isolation as given."""
    if isolation != "auto":
        return isolation
    found = _discover(Path(path).resolve()) if Path(path).is_dir() else None
    return "worktree" if found is not None and found[2] is not None else "none"


def unborn_top(path: str | Path) -> Path | None:
    """The top of the git checkout holding ``path`` when its repository has no commit yet; None
    outside git, in a bare repository, or once there is a commit. One git process."""
    try:
        found = _discover(Path(path).resolve())
    except GitIsolationError:  # a bare repository: opening the workspace says so
        return None
    return found[0] if found is not None and found[2] is None else None


def _discover(target: Path) -> tuple[Path, str | None, str | None] | None:
    """(top of the checkout, the user's branch ref or None when detached, HEAD sha or None
    before the first commit), or None outside git; one git process."""
    found = run_git(target, ("rev-parse", "--absolute-git-dir", "--is-bare-repository",
                             "--show-toplevel", "HEAD", "--symbolic-full-name", "HEAD"), None)  # fmt: skip
    lines = found.stdout.splitlines()
    if found.returncode != 0 and "not a git repository" in found.stderr:
        return None
    if len(lines) < 3:  # a bare repository, or a place inside a .git folder
        where = lines[0] if lines else target
        raise GitIsolationError(f"{where} is a bare repository; it has no files to work on")
    root = Path(lines[2]).resolve()
    if found.returncode != 0:
        if "unknown revision" in found.stderr:
            return root, None, None
        raise GitIsolationError(f"git rev-parse failed in {target}: {found.stderr.strip()}")
    head, ref = lines[3], lines[4]
    return root, ref if ref.startswith("refs/") else None, head


def run_branch_suffix(run_id: str) -> str:
    """The last part of run ``run_id``'s branch name: 8 hex of the id (its own when it starts
    with them, else of its digest)."""
    if re.fullmatch(r"[0-9a-fA-F]{8}", run_id[:8]):
        return run_id[:8].lower()
    return sha256(run_id.encode()).hexdigest()[:8]


def is_run_branch(branch: str, run_id: str) -> bool:
    """Whether ``branch`` is named as run ``run_id``'s branch: ``harness/<loop>.<8 hex of the
    loop>.<8 hex of the run>`` (or without the loop's part, for a loop made without a key)."""
    pattern = rf"[A-Za-z0-9_-]+(\.[0-9a-f]{{8}})?\.{run_branch_suffix(run_id)}"
    return re.fullmatch(re.escape(BRANCH_PREFIX) + pattern, branch) is not None


PART = "."
"""Between the parts of a run branch's name (``harness/fix-api.3f9c1e2a.7b8d9e0f``): a dot, which
redaction never takes as part of a token, so the name as a whole can never look like a secret and
be redacted in progress.md's Run section (a resume could not find it) or in what a person reads."""


def ref_stem(loop_name: str, loop_key: str | Path | None = None) -> str:
    """The loop's part of its run branches' names: ``harness/<stem>.<8 hex of the run>``.

    With ``loop_key`` (what tells the loop apart from every other: its progress file) the stem
    ends with 8 hex of its digest, so loops whose names read alike (``fix.api``, ``fix-api``, two
    unnamed loops) never share a branch: ``harness/<name>.<8 hex of the loop>``.
    """
    stem = re.sub(r"[^A-Za-z0-9_-]+", "-", loop_name).strip("-")
    if not stem:
        raise ConfigError(f"loop_name {loop_name!r} must contain a letter or a digit")
    if loop_key is None:
        return stem
    return f"{stem}{PART}{sha256(loop_identity(loop_key).encode()).hexdigest()[:8]}"


def loop_identity(loop_key: str | Path) -> str:
    """``loop_key`` as recorded in ``branch.<name>.harnessLoop``: an absolute, resolved path."""
    return str(Path(loop_key).resolve())


@dataclass(frozen=True)
class _Placement:
    """Where a run's branch and checkout go in one user repository."""

    user_root: Path
    rel: Path  # the requested folder inside the repository
    worktrees_dir: str | Path | None
    isolation: Isolation
    own_files: tuple[str, ...] = ()  # relative to user_root; not the user's changes
    park: bool = True  # take a parked worktree, and let the run park its own

    def worktree_path(self, leaf: str) -> Path:
        if self.worktrees_dir is None:
            parent = self.user_root.parent / WORKTREES_FOLDER / self.user_root.name
        else:
            parent = Path(self.worktrees_dir).resolve()
        if parent.is_relative_to(self.user_root):
            raise ConfigError(
                f"worktrees_dir {parent} must be outside the repository {self.user_root}"
            )
        return parent / leaf

    def create(
        self,
        loop_name: str,
        run_id: str | None,
        origin: str | None,
        head: str,
        loop_key: str | Path | None = None,
    ) -> Workspace:
        # The harness's own files count only for a checkout the run switches to its branch.
        own = () if self.isolation == "branch" else self.own_files
        dirty = status(self.user_root, exclude=own)
        if dirty and self.isolation == "branch":
            raise GitIsolationError(
                f"isolation='branch' needs a clean checkout, but {self.user_root} has uncommitted "
                f"changes ({describe_dirty(dirty)}); commit or stash them, or use isolation='worktree'"
            )
        warning = None
        if dirty:
            warning = (
                f"{self.user_root} has uncommitted changes ({describe_dirty(dirty)}); the run "
                f"starts from HEAD {head[:12]} without them"
            )
        stem = ref_stem(loop_name, loop_key)
        make = self._checkout_new if self.isolation == "branch" else self._worktree_new
        for _ in range(_ID_ATTEMPTS):
            suffix = secrets.token_hex(4) if run_id is None else run_branch_suffix(run_id)
            leaf = f"{stem}{PART}{suffix}"
            branch = BRANCH_PREFIX + leaf
            root = make(branch, leaf, head)
            if root is not None:
                git(self.user_root, "config", f"branch.{branch}.harnessBase", head)
                if origin is not None:
                    git(self.user_root, "config", f"branch.{branch}.harnessOrigin", origin)
                if loop_key is not None:
                    key = loop_identity(loop_key)
                    git(self.user_root, "config", f"branch.{branch}.harnessLoop", key)
                return self._workspace(root, branch, head, origin, warning)
            if run_id is not None:
                raise GitIsolationError(
                    f"branch {branch} (or its worktree) already exists in {self.user_root}; pass "
                    f"resume_branch={branch!r} to continue that run, or another run_id"
                )
        raise GitIsolationError(
            f"no free branch name {BRANCH_PREFIX}{stem}{PART}* in {self.user_root}"
        )

    def resume(self, branch: str) -> Workspace:
        if not branch_exists(self.user_root, branch):
            raise GitIsolationError(
                f"cannot resume: branch {branch} no longer exists in {self.user_root}; "
                "start a new run instead"
            )
        base = config_get(self.user_root, f"branch.{branch}.harnessBase")
        if base is None:
            raise GitIsolationError(
                f"cannot resume: branch {branch} in {self.user_root} has no "
                f"branch.{branch}.harnessBase config key, so it was not made by a harness run"
            )
        origin = config_get(self.user_root, f"branch.{branch}.harnessOrigin")
        holder = checkouts(self.user_root).get(f"refs/heads/{branch}")
        if holder is not None and not holder.exists():
            git(self.user_root, "worktree", "prune")
            holder = None
        if holder is None:
            leaf = branch.removeprefix(BRANCH_PREFIX).replace("/", "-")
            make = (
                self._checkout_existing if self.isolation == "branch" else self._worktree_existing
            )
            holder = make(branch, leaf)
        return self._workspace(holder.resolve(), branch, base, origin, None)

    def _workspace(
        self, root: Path, branch: str, base: str, origin: str | None, warning: str | None
    ) -> Workspace:
        path = root / self.rel
        path.mkdir(parents=True, exist_ok=True)
        isolation: Isolation = "branch" if root == self.user_root else "worktree"
        return Workspace(
            path, branch, base, isolation, root, self.user_root, origin, warning, self.park
        )

    def _worktree_new(self, branch: str, leaf: str, head: str) -> Path | None:
        """Branch + worktree at ``head``; None when either name is already taken."""
        if self.worktree_path(leaf).exists() or not claim_branch(self.user_root, branch, head):
            return None
        try:
            return self._worktree_existing(branch, leaf)
        except GitIsolationError:
            git(self.user_root, "branch", "-D", branch)
            raise

    def _checkout_new(self, branch: str, leaf: str, head: str) -> Path | None:
        if not claim_branch(self.user_root, branch, head):
            return None
        git(self.user_root, "checkout", "--quiet", branch)
        return self.user_root

    def _worktree_existing(self, branch: str, leaf: str) -> Path:
        target = self.worktree_path(leaf)
        if target.exists():
            raise GitIsolationError(
                f"cannot resume {branch}: {target} exists but is not its worktree; move it away"
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        if self.park and self.worktrees_dir is None:  # what deleted clones beside it parked
            remove_orphans(self.user_root.parent)
        reused = unpark(self.user_root, target, branch) if self.park else None
        if reused is not None:
            return reused
        # The folder itself, made first, keeps a run finishing alongside from tidying away its
        # still-empty parents before git writes into it.
        target.mkdir(parents=True)
        try:
            git(self.user_root, "worktree", "add", "--quiet", str(target), branch)
        except GitIsolationError:
            target.rmdir()
            raise
        return target

    def _checkout_existing(self, branch: str, leaf: str) -> Path:
        dirty = status(self.user_root)
        if dirty:
            raise GitIsolationError(
                f"cannot resume {branch} with isolation='branch': {self.user_root} has uncommitted "
                f"changes ({describe_dirty(dirty)})"
            )
        git(self.user_root, "checkout", "--quiet", branch)
        return self.user_root
