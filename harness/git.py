"""Git isolation: each run works on its own branch, by default in its own worktree.

How a run meets the user's repository:

* ``worktree`` (default): a new branch ``harness/<loop-name>-<8 hex>`` at the user's HEAD,
  checked out in ``<repo parent>/.harness-worktrees/<repo name>/<leaf>``. The user's HEAD,
  index and files are never written. Uncommitted user changes are *not* carried over; the
  workspace says so in ``warning``. A detached HEAD is fine (the run starts from that commit),
  but then there is no branch for :meth:`Workspace.merge_ff` to move.
* ``branch``: the branch is created and checked out in the user's own checkout, which must
  be clean (untracked files included, since rounds commit them).
* ``none``: work in place, no commits; ``diff`` is against HEAD when the folder is a git repo.
  ``rollback``, ``reset_to`` and ``merge_ff`` are refused there: they would rewrite the
  user's own files.

The base commit and the user's branch are kept in the repository config as
``branch.<name>.harnessBase`` and ``branch.<name>.harnessOrigin``, so a resumed run diffs
against the right commit; ``git branch -D`` removes them together with the branch.
Round commits carry the identity ``harness <harness@localhost>``, a ``Harness-Round: N``
trailer, and skip the user's hooks; nothing in the user's git config is read for them or
changed.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from hashlib import sha256
from pathlib import Path
from typing import Literal, get_args

from git import InvalidGitRepositoryError, NoSuchPathError, Repo

from harness.errors import ConfigError

Isolation = Literal["worktree", "branch", "none"]

BRANCH_PREFIX = "harness/"
IDENTITY_ENV = {
    "GIT_AUTHOR_NAME": "harness",
    "GIT_AUTHOR_EMAIL": "harness@localhost",
    "GIT_COMMITTER_NAME": "harness",
    "GIT_COMMITTER_EMAIL": "harness@localhost",
}
# Round commits skip the user's hooks and signing; the message is kept as given.
_COMMIT = ("-c", f"core.hooksPath={os.devnull}", "commit", "--quiet", "--no-gpg-sign",
           "--cleanup=whitespace")  # fmt: skip
_INHERITED_GIT_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_PREFIX")
# Another git process holds a lock, or is half-way through registering a worktree.
_CONTENTION = re.compile(
    r"\.lock'?: File exists|could not lock config file|failed to read .*/worktrees/"
)
_RETRIES = 80  # at most ~5 s of waiting for another git process
_ID_ATTEMPTS = 20
_WORKTREES = ".harness-worktrees"


class GitIsolationError(ConfigError):
    """The repository cannot host, or hand back, a run as asked; the message names the path."""


def _run(
    cwd: Path, args: tuple[str, ...], env: Mapping[str, str] | None
) -> subprocess.CompletedProcess[str]:
    """Run git, retrying while another git process is in the way."""
    full_env = {k: v for k, v in os.environ.items() if k not in _INHERITED_GIT_ENV}
    full_env.update(LC_ALL="C", LANGUAGE="C", GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0")
    full_env.update(env or {})
    for _ in range(_RETRIES):
        proc = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=full_env,
            capture_output=True,
            encoding="utf-8",
            errors="replace",
        )
        if proc.returncode == 0 or not _CONTENTION.search(proc.stderr):
            break
        time.sleep(0.02 + random.random() * 0.08)
    return proc


def _git(cwd: Path, *args: str, env: Mapping[str, str] | None = None) -> str:
    """Stdout of a git command that must succeed."""
    proc = _run(cwd, args, env)
    if proc.returncode != 0:
        raise GitIsolationError(f"git {' '.join(args)} failed in {cwd}: {proc.stderr.strip()}")
    return proc.stdout


def _git_test(cwd: Path, *args: str, env: Mapping[str, str] | None = None) -> bool:
    """A git command used as a predicate: exit 0 is yes, 1 is no, anything else an error."""
    proc = _run(cwd, args, env)
    if proc.returncode not in (0, 1):
        raise GitIsolationError(f"git {' '.join(args)} failed in {cwd}: {proc.stderr.strip()}")
    return proc.returncode == 0


def _status(root: Path, *, untracked: bool = True) -> list[str]:
    """``git status --porcelain`` lines of a checkout (ignored files left out)."""
    mode = "--untracked-files=normal" if untracked else "--untracked-files=no"
    return _git(root, "status", "--porcelain", mode).splitlines()


def _describe_dirty(lines: list[str]) -> str:
    shown = ", ".join(line[3:] for line in lines[:5])
    return shown + (f" and {len(lines) - 5} more" if len(lines) > 5 else "")


def _branch_exists(root: Path, branch: str) -> bool:
    return _git_test(root, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}")


def _claim_branch(root: Path, branch: str, head: str) -> bool:
    """Create ``branch`` at ``head``; False when that name is taken."""
    proc = _run(root, ("branch", "--no-track", branch, head), None)
    if proc.returncode != 0 and "already exists" in proc.stderr:
        return False
    if proc.returncode != 0:
        raise GitIsolationError(
            f"could not create branch {branch} in {root}: {proc.stderr.strip()}"
        )
    return True


def _config_get(root: Path, key: str) -> str | None:
    proc = _run(root, ("config", "--get", key), None)
    return proc.stdout.strip() if proc.returncode == 0 else None


def _checkouts(root: Path) -> dict[str, Path]:
    """Which worktree (main one included) has each branch ref checked out."""
    held: dict[str, Path] = {}
    current: Path | None = None
    for line in _git(root, "worktree", "list", "--porcelain").splitlines():
        if line.startswith("worktree "):
            current = Path(line.removeprefix("worktree "))
        elif line.startswith("branch ") and current is not None:
            held[line.removeprefix("branch ")] = current
    return held


@dataclass(frozen=True)
class Workspace:
    """Where a run works, and the git operations the outer loop needs on it."""

    path: Path  # where the agent, gates and critic work
    branch: str | None  # the run branch; None for isolation="none"
    base_commit: str | None  # what diff() compares against; None outside git
    isolation: Isolation
    root: Path | None = None  # top of the checkout the run works in; None outside git
    user_root: Path | None = None  # top of the user's own checkout
    origin: str | None = None  # the user's branch ref at the start; None when HEAD was detached
    warning: str | None = None  # something the user should know, e.g. changes left behind

    def commit_round(self, round: int, message: str) -> str | None:
        """Commit everything (untracked too, .gitignore respected); the sha, or None if nothing changed."""
        if self.isolation == "none" or self.root is None:
            return None
        _git(self.root, "add", "-A")
        if _git_test(self.root, "diff", "--cached", "--quiet"):
            return None
        trailer = f"Harness-Round: {round}"
        _git(self.root, *_COMMIT, "-m", message, "--trailer", trailer, env=IDENTITY_ENV)
        return _git(self.root, "rev-parse", "HEAD").strip()

    def diff(self, *, max_chars: int = 20_000) -> str:
        """The run so far against the base commit, untracked files included, cut at ``max_chars``."""
        if max_chars <= 0:
            raise ConfigError(f"max_chars must be positive, got {max_chars}")
        text = self._against_base("--no-color", "--no-ext-diff", "--find-renames")
        if len(text) <= max_chars:
            return text
        cut = text.rfind("\n", 0, max_chars) + 1 or max_chars
        return f"{text[:cut]}[... diff truncated: {cut} of {len(text)} chars shown ...]\n"

    def changed_files(self) -> list[str]:
        """Paths changed against the base: committed, uncommitted and untracked."""
        names = self._against_base("--name-only", "-z", "--no-renames")
        return [name for name in names.split("\0") if name]

    def rollback(self) -> None:
        """Discard uncommitted changes and untracked files: back to the last round commit."""
        root = self._run_root("rollback")
        _git(root, "reset", "--hard", "--quiet", "HEAD")
        _git(root, "clean", "-fd", "--quiet")

    def reset_to(self, commit: str) -> None:
        """Move the run branch and its files to ``commit`` (the base or a commit of this run)."""
        root = self._run_root("reset_to")
        proc = _run(root, ("rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"), None)
        if proc.returncode != 0:
            raise GitIsolationError(f"reset_to: {commit!r} is not a commit in {root}")
        sha = proc.stdout.strip()
        if not _git_test(root, "merge-base", "--is-ancestor", str(self.base_commit), sha):
            raise GitIsolationError(
                f"reset_to: {commit!r} is not part of run branch {self.branch} "
                f"(it does not descend from the base {self.base_commit})"
            )
        _git(root, "reset", "--hard", "--quiet", sha)
        _git(root, "clean", "-fd", "--quiet")

    def merge_ff(self) -> None:
        """Fast-forward the user's branch to the run branch; refused unless it is a pure fast-forward.

        Only committed rounds move. Where the user's branch is checked out, that checkout
        must have no uncommitted changes to tracked files.
        """
        root = self._run_root("merge_ff")
        if self.origin is None:
            raise GitIsolationError(
                f"merge_ff: the run started from a detached HEAD in {self.user_root}; there is "
                f"no branch to fast-forward. The work is on branch {self.branch}."
            )
        run_tip = _git(root, "rev-parse", f"refs/heads/{self.branch}").strip()
        user_tip = _git(root, "rev-parse", self.origin).strip()
        if user_tip == run_tip:
            return
        if not _git_test(root, "merge-base", "--is-ancestor", user_tip, run_tip):
            raise GitIsolationError(
                f"merge_ff: {self.origin} has moved on since the run started (it is at "
                f"{user_tip[:12]}, not an ancestor of {self.branch} at {run_tip[:12]}); "
                f"merge or rebase {self.branch} yourself"
            )
        holder = _checkouts(root).get(self.origin)
        if holder is None:
            _git(root, "update-ref", "-m", f"harness: fast-forward to {self.branch}",
                 self.origin, run_tip, user_tip)  # fmt: skip
            return
        dirty = _status(holder, untracked=False)
        if dirty:
            raise GitIsolationError(
                f"merge_ff: {holder} has uncommitted changes ({_describe_dirty(dirty)}); "
                f"commit or stash them, then merge {self.branch}"
            )
        _git(holder, "merge", "--ff-only", "--quiet", run_tip)

    def finish(self, *, prune: bool = True) -> None:
        """Remove the run's worktree (uncommitted leftovers go with it); the branch stays."""
        if self.isolation != "worktree" or not prune or self.root is None:
            return
        user_root = self.user_root or self.root
        if self.root.exists():
            _git(user_root, "worktree", "remove", "--force", str(self.root))
        else:
            _git(user_root, "worktree", "prune")
        if self.root.parent.parent.name == _WORKTREES:  # the default place: tidy it when empty
            with contextlib.suppress(OSError):
                self.root.parent.rmdir()
                self.root.parent.parent.rmdir()

    def _run_root(self, action: str) -> Path:
        if self.isolation == "none" or self.root is None:
            raise GitIsolationError(
                f"{action}: isolation='none' works in place in {self.path}; there is no run "
                "branch to act on"
            )
        return self.root

    def _against_base(self, *diff_args: str) -> str:
        """``git diff --cached <base>`` over a throwaway index holding every current file."""
        if self.root is None or self.base_commit is None:
            return ""
        with tempfile.TemporaryDirectory(prefix="harness-index-") as tmp:
            index = Path(tmp) / "index"
            real = self.root / _git(self.root, "rev-parse", "--git-path", "index").strip()
            if real.exists():
                # copy2 keeps the index's mtime: git compares it with each file's mtime to spot
                # "racily clean" entries (changed within the same second, same size), and a
                # fresh mtime would hide such edits from the diff.
                shutil.copy2(real, index)
            env = {"GIT_INDEX_FILE": str(index)}
            _git(self.root, "add", "-A", env=env)
            return _git(self.root, "diff", "--cached", *diff_args, self.base_commit, env=env)


def open_workspace(
    path: str | Path,
    *,
    isolation: Isolation = "worktree",
    loop_name: str = "run",
    run_id: str | None = None,
    worktrees_dir: str | Path | None = None,
    resume_branch: str | None = None,
) -> Workspace:
    """Prepare where a run works: a fresh branch (worktree or in place), a resumed one, or none."""
    if isolation not in get_args(Isolation):
        raise ConfigError(f"isolation must be one of {get_args(Isolation)}, got {isolation!r}")
    target = Path(path).resolve()
    if not target.is_dir():
        raise ConfigError(f"workspace path {target} does not exist or is not a folder")
    found = _discover(target)
    if isolation == "none":
        if resume_branch is not None:
            raise ConfigError("resume_branch needs isolation='worktree' or 'branch', not 'none'")
        root, _, head = found or (None, None, None)
        return Workspace(target, None, head, "none", root, root)
    hint = "pass isolation='none' to work in place"
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
    place = _Placement(root, target.relative_to(root), worktrees_dir, isolation)
    if resume_branch is not None:
        return place.resume(resume_branch)
    return place.create(loop_name, run_id, origin, head)


def _discover(target: Path) -> tuple[Path, str | None, str | None] | None:
    """(top of the checkout, the user's branch ref or None when detached, HEAD sha or None
    before the first commit), or None outside git."""
    try:
        repo = Repo(target, search_parent_directories=True)
    except (InvalidGitRepositoryError, NoSuchPathError):
        return None
    with repo:
        if repo.bare or repo.working_tree_dir is None:
            raise GitIsolationError(
                f"{repo.git_dir} is a bare repository; it has no files to work on"
            )
        root = Path(repo.working_tree_dir).resolve()
        if not repo.head.is_valid():
            return root, None, None
        origin = None if repo.head.is_detached else repo.head.ref.path
        return root, origin, repo.head.commit.hexsha


def _short_id(run_id: str | None) -> str:
    """8 hex chars: the run id's own prefix when it starts with hex, else a digest of it."""
    if run_id is None:
        return secrets.token_hex(4)
    if re.fullmatch(r"[0-9a-fA-F]{8}", run_id[:8]):
        return run_id[:8].lower()
    return sha256(run_id.encode()).hexdigest()[:8]


def _ref_safe(loop_name: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9_-]+", "-", loop_name).strip("-")
    if not stem:
        raise ConfigError(f"loop_name {loop_name!r} must contain a letter or a digit")
    return stem


@dataclass(frozen=True)
class _Placement:
    """Where a run's branch and checkout go in one user repository."""

    user_root: Path
    rel: Path  # the requested folder inside the repository
    worktrees_dir: str | Path | None
    isolation: Isolation

    def worktree_path(self, leaf: str) -> Path:
        if self.worktrees_dir is None:
            parent = self.user_root.parent / _WORKTREES / self.user_root.name
        else:
            parent = Path(self.worktrees_dir).resolve()
        if parent.is_relative_to(self.user_root):
            raise ConfigError(
                f"worktrees_dir {parent} must be outside the repository {self.user_root}"
            )
        return parent / leaf

    def create(
        self, loop_name: str, run_id: str | None, origin: str | None, head: str
    ) -> Workspace:
        dirty = _status(self.user_root)
        if dirty and self.isolation == "branch":
            raise GitIsolationError(
                f"isolation='branch' needs a clean checkout, but {self.user_root} has uncommitted "
                f"changes ({_describe_dirty(dirty)}); commit or stash them, or use isolation='worktree'"
            )
        warning = None
        if dirty:
            warning = (
                f"{self.user_root} has uncommitted changes ({_describe_dirty(dirty)}); the run "
                f"starts from HEAD {head[:12]} without them"
            )
        stem = _ref_safe(loop_name)
        make = self._checkout_new if self.isolation == "branch" else self._worktree_new
        for _ in range(_ID_ATTEMPTS):
            leaf = f"{stem}-{_short_id(run_id)}"
            branch = BRANCH_PREFIX + leaf
            root = make(branch, leaf, head)
            if root is not None:
                _git(self.user_root, "config", f"branch.{branch}.harnessBase", head)
                if origin is not None:
                    _git(self.user_root, "config", f"branch.{branch}.harnessOrigin", origin)
                return self._workspace(root, branch, head, origin, warning)
            if run_id is not None:
                raise GitIsolationError(
                    f"branch {branch} (or its worktree) already exists in {self.user_root}; pass "
                    f"resume_branch={branch!r} to continue that run, or another run_id"
                )
        raise GitIsolationError(f"no free branch name {BRANCH_PREFIX}{stem}-* in {self.user_root}")

    def resume(self, branch: str) -> Workspace:
        if not _branch_exists(self.user_root, branch):
            raise GitIsolationError(
                f"cannot resume: branch {branch} no longer exists in {self.user_root}; "
                "start a new run instead"
            )
        base = _config_get(self.user_root, f"branch.{branch}.harnessBase")
        if base is None:
            raise GitIsolationError(
                f"cannot resume: branch {branch} in {self.user_root} has no "
                f"branch.{branch}.harnessBase config key, so it was not made by a harness run"
            )
        origin = _config_get(self.user_root, f"branch.{branch}.harnessOrigin")
        holder = _checkouts(self.user_root).get(f"refs/heads/{branch}")
        if holder is not None and not holder.exists():
            _git(self.user_root, "worktree", "prune")
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
        return Workspace(path, branch, base, isolation, root, self.user_root, origin, warning)

    def _worktree_new(self, branch: str, leaf: str, head: str) -> Path | None:
        """Branch + worktree at ``head``; None when either name is already taken."""
        if self.worktree_path(leaf).exists() or not _claim_branch(self.user_root, branch, head):
            return None
        try:
            return self._worktree_existing(branch, leaf)
        except GitIsolationError:
            _git(self.user_root, "branch", "-D", branch)
            raise

    def _checkout_new(self, branch: str, leaf: str, head: str) -> Path | None:
        if not _claim_branch(self.user_root, branch, head):
            return None
        _git(self.user_root, "checkout", "--quiet", branch)
        return self.user_root

    def _worktree_existing(self, branch: str, leaf: str) -> Path:
        target = self.worktree_path(leaf)
        if target.exists():
            raise GitIsolationError(
                f"cannot resume {branch}: {target} exists but is not its worktree; move it away"
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        _git(self.user_root, "worktree", "add", "--quiet", str(target), branch)
        return target

    def _checkout_existing(self, branch: str, leaf: str) -> Path:
        dirty = _status(self.user_root)
        if dirty:
            raise GitIsolationError(
                f"cannot resume {branch} with isolation='branch': {self.user_root} has uncommitted "
                f"changes ({_describe_dirty(dirty)})"
            )
        _git(self.user_root, "checkout", "--quiet", branch)
        return self.user_root
