"""A run's workspace: where it works, and the git operations the outer loop needs there.

:func:`harness.workspace.git.open_workspace` makes one. Round commits carry the identity
``harness <harness@localhost>``, a ``Harness-Round: N`` trailer, and skip the user's hooks and
signing; nothing in the user's git config is read for them or changed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Literal

from harness.core.errors import BookkeepingError, ConfigError
from harness.workspace.caches import add_all
from harness.workspace.checkout import (
    CHECKOUTS,
    ReusedCheckout,
    delivered_tree,
    file_at,
    staged_tree,
    tree_of,
)
from harness.workspace.git_cmd import (
    IDENTITY_ENV,
    GitIsolationError,
    checkouts,
    describe_dirty,
    git,
    git_test,
    rev_parse,
    run_git,
    status,
)
from harness.workspace.parked import park as park_worktree
from harness.workspace.round_refs import rounds_prefix

Isolation = Literal["worktree", "branch", "none"]

# Round commits skip the user's hooks and signing; the message is kept as given.
_COMMIT = ("-c", f"core.hooksPath={os.devnull}", "commit", "--quiet", "--no-gpg-sign",
           "--cleanup=whitespace")  # fmt: skip
WORKTREES_FOLDER = ".harness-worktrees"
"""The folder beside the repository that holds run worktrees by default."""


def tidy_place(folder: Path) -> None:
    """Remove ``<repo parent>/.harness-worktrees/<repo>`` and its parent once they are empty."""
    if folder.parent.name != WORKTREES_FOLDER:
        return
    with contextlib.suppress(OSError):
        folder.rmdir()
        folder.parent.rmdir()


def truncate_diff(text: str, max_chars: int) -> str:
    """``text`` cut at a line break before ``max_chars``, with a marker stating what was shown."""
    if len(text) <= max_chars:
        return text
    cut = text.rfind("\n", 0, max_chars) + 1 or max_chars
    return f"{text[:cut]}[... diff truncated: {cut} of {len(text)} chars shown ...]\n"


@dataclass(frozen=True)
class Delivery:
    """What a round delivers, from one look at the workspace's files (:meth:`Workspace.delivery`)."""

    changed: tuple[str, ...]  # paths changed against the base, relative to the workspace
    diff: str  # the whole diff against the base
    tree: str | None  # the tree the gates judge (protected paths as at the base); None outside git


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
    parking: bool = True  # take parked worktrees and checkouts, park its own at the end

    def clear_stale_locks(self) -> list[str]:
        """Remove lock files a killed run left in its own worktree's git folder.

        Only for ``worktree`` isolation, and only by the process holding the loop's lock: no
        other git process works in a run's private worktree, on its branch or on the refs that
        keep its rounds, so their locks are stale.
        """
        if self.isolation != "worktree" or self.root is None or self.branch is None:
            return []
        private = Path(git(self.root, "rev-parse", "--absolute-git-dir").strip())
        common = (self.root / git(self.root, "rev-parse", "--git-common-dir").strip()).resolve()
        kept = common / rounds_prefix(self.branch)  # the refs keeping its rounds are its own too
        candidates = [
            *private.glob("*.lock"),
            common / "refs" / "heads" / f"{self.branch}.lock",
            *kept.glob("*.lock"),
        ]
        removed = []
        for lock in candidates:
            with contextlib.suppress(FileNotFoundError):
                lock.unlink()
                removed.append(lock.name)
        return removed

    def commit_round(self, round: int, message: str) -> str | None:
        """Commit everything (untracked too, .gitignore respected, caches left out); the sha,
        or None if nothing changed."""
        if self.isolation == "none" or self.root is None:
            return None
        with _bookkeeping(f"commit round {round}"):
            git(self.root, *add_all())
            if git_test(self.root, "diff", "--cached", "--quiet"):
                return None
            # The trailer written as `--trailer` would (a paragraph of its own at the end), without
            # the `git interpret-trailers` process that option starts.
            text = f"{message.rstrip()}\n\nHarness-Round: {round}\n"
            git(self.root, *_COMMIT, "-m", text, env=IDENTITY_ENV)
            return git(self.root, "rev-parse", "HEAD").strip()

    def clean_checkout(
        self, protect: Sequence[str], *, at_base: bool = False, tree: str | None = None
    ) -> AbstractContextManager[Path]:
        """The workspace as the round commit holds it, protected paths as at the base (see
        :mod:`harness.workspace.checkout`), in the run's one reused checkout: it stays for the
        next round until :meth:`close_checkout`; the workspace itself outside git.

        ``tree`` is a :class:`Delivery`'s, when the files were just looked at (no second look).
        """
        if self.root is None or self.base_commit is None:
            return contextlib.nullcontext(self.path)
        if at_base:
            tree = self._base_tree
        elif tree is None:
            tree = delivered_tree(
                self.root, self.path, base=self.base_commit, protect=protect, index=self._index
            )
        return self.checkout.holding(tree, work=not at_base)

    @cached_property
    def checkout(self) -> ReusedCheckout:
        """Where the gates judge this workspace's rounds (see :meth:`clean_checkout`)."""
        assert self.root is not None
        pool = self.root.parent / CHECKOUTS if self.isolation == "worktree" else None
        return ReusedCheckout(self.root, self.path, pool, take_parked=self.parking)

    def close_checkout(self, *, park: bool = False) -> None:
        """Remove the reused checkout of :meth:`clean_checkout`, if one was made; with ``park``
        a run in its own worktree leaves it for the next run (see
        :mod:`harness.workspace.checkout`) unless :attr:`parking` is off."""
        if "checkout" in self.__dict__:
            self.checkout.close(park=park and self.parking)

    def file_at_base(self, path: str) -> str | None:
        """The text of ``path`` (relative to the workspace) at the base; None if it was absent."""
        if self.root is None or self.base_commit is None:
            return None
        where = (self.path.resolve() / path).relative_to(self.root.resolve()).as_posix()
        return file_at(self.root, self.base_commit, where)

    def delivery(self, protect: Sequence[str]) -> Delivery:
        """Paths changed against the base, the whole diff and the tree :meth:`clean_checkout`
        judges, from one look at the files: a single ``git add -A`` of the whole checkout (the
        tree needs it all).

        Committed, uncommitted and untracked changes count (``.gitignore`` respected, byte code
        and tool caches never); paths are relative to the workspace, and files outside the
        workspace folder are left out.

        A run with a branch stages the files in its checkout's own index (the round's commit
        adds them all the same), so git reads a file its stat data cannot vouch for (one
        written in the same second as the index) once, not once per look.
        """
        if self.root is None or self.base_commit is None:
            return Delivery((), "", None)
        with self._staged(":/", in_place=self.branch is not None) as env:
            names, diff = self._diffs(env, _NAMES, _DIFF)
            with _bookkeeping("take the round's files"):
                tree = staged_tree(
                    self.root, self.path, base=self.base_commit, protect=protect, env=env
                )
        return Delivery(tuple(_split_names(names)), diff, tree)

    def diff(self, *, max_chars: int = 20_000) -> str:
        """The diff of :meth:`delivery`, cut at ``max_chars``."""
        if max_chars <= 0:
            raise ConfigError(f"max_chars must be positive, got {max_chars}")
        (diff,) = self._against_base(_DIFF)
        return truncate_diff(diff, max_chars)

    def changed_files(self) -> list[str]:
        """The paths of :meth:`delivery`."""
        (names,) = self._against_base(_NAMES)
        return _split_names(names)

    def reset_to(self, commit: str) -> None:
        """Move the run branch and its files to ``commit`` (the base or a commit of this run)."""
        root = self._run_root("reset_to")
        sha = rev_parse(root, f"{commit}^{{commit}}")
        if sha is None:
            raise GitIsolationError(f"reset_to: {commit!r} is not a commit in {root}")
        if not git_test(root, "merge-base", "--is-ancestor", str(self.base_commit), sha):
            raise GitIsolationError(
                f"reset_to: {commit!r} is not part of run branch {self.branch} "
                f"(it does not descend from the base {self.base_commit})"
            )
        git(root, "reset", "--hard", "--quiet", sha)
        git(root, "clean", "-fd", "--quiet")

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
        run_tip = git(root, "rev-parse", f"refs/heads/{self.branch}").strip()
        user_tip = git(root, "rev-parse", self.origin).strip()
        if user_tip == run_tip:
            return
        if not git_test(root, "merge-base", "--is-ancestor", user_tip, run_tip):
            raise GitIsolationError(
                f"merge_ff: {self.origin} has moved on since the run started (it is at "
                f"{user_tip[:12]}, not an ancestor of {self.branch} at {run_tip[:12]}); "
                f"merge or rebase {self.branch} yourself"
            )
        holder = checkouts(root).get(self.origin)
        if holder is None:
            git(root, "update-ref", "-m", f"harness: fast-forward to {self.branch}",
                 self.origin, run_tip, user_tip)  # fmt: skip
            return
        dirty = status(holder, untracked=False)
        if dirty:
            raise GitIsolationError(
                f"merge_ff: {holder} has uncommitted changes ({describe_dirty(dirty)}); "
                f"commit or stash them, then merge {self.branch}"
            )
        git(holder, "merge", "--ff-only", "--quiet", run_tip)

    def finish(self, *, prune: bool = True, park: bool = False) -> None:
        """Remove the run's worktree (uncommitted leftovers go with it); the branch stays.

        With ``park`` the worktree is kept, detached, for the next run in the repository to
        take (see :mod:`harness.workspace.parked`) while fewer than its maximum wait, unless
        :attr:`parking` is off. Raises :class:`GitIsolationError` naming the worktree when git cannot remove it.
        """
        self.close_checkout(park=park)
        if self.isolation != "worktree" or not prune or self.root is None:
            return
        user_root = self.user_root or self.root
        if park and self.parking and self.root.exists() and park_worktree(user_root, self.root):
            return
        if self.root.exists():
            proc = run_git(user_root, ("worktree", "remove", "--force", str(self.root)), None)
            if proc.returncode != 0:
                raise GitIsolationError(
                    f"finish: could not remove the worktree {self.root} "
                    f"({proc.stderr.strip() or f'git exited {proc.returncode}'}); branch "
                    f"{self.branch} keeps every committed round. Remove the folder with "
                    f"`git worktree remove --force {self.root}` once nothing uses it."
                )
        else:
            git(user_root, "worktree", "prune")
        tidy_place(self.root.parent)

    def _run_root(self, action: str) -> Path:
        if self.isolation == "none" or self.root is None:
            raise GitIsolationError(
                f"{action}: isolation='none' works in place in {self.path}; there is no run "
                "branch to act on"
            )
        return self.root

    @cached_property
    def _base_tree(self) -> str:
        """The tree object of the base commit (looked up once: a commit's tree never changes)."""
        assert self.root is not None
        assert self.base_commit is not None
        return tree_of(self.root, self.base_commit)

    @cached_property
    def _index(self) -> Path:
        """The checkout's own index file (for a worktree, inside the repository's git folder)."""
        assert self.root is not None
        return self.root / git(self.root, "rev-parse", "--git-path", "index").strip()

    @cached_property
    def _scope(self) -> str:
        """What a diff's ``add -A`` covers: the workspace folder, or the whole checkout when
        the workspace is its top or a folder git ignores (git refuses that as a pathspec)."""
        assert self.root is not None
        if self.path == self.root or git_test(
            self.root, "check-ignore", "-q", "--no-index", str(self.path)
        ):
            return ":/"
        return "."

    def _against_base(self, *diff_args: tuple[str, ...]) -> list[str]:
        """``git diff --cached <base>`` once per argument tuple, all over one throwaway index
        holding the workspace's current files."""
        if self.root is None or self.base_commit is None:
            return ["" for _ in diff_args]
        with self._staged(self._scope) as env:
            return self._diffs(env, *diff_args)

    @contextlib.contextmanager
    def _staged(self, scope: str, *, in_place: bool = False) -> Iterator[dict[str, str]]:
        """The environment naming a throwaway copy of the checkout's index with ``scope``'s
        current files added (``git add -A``); removed when the block ends. With ``in_place``
        they are added to the checkout's own index, then copied."""
        with tempfile.TemporaryDirectory(prefix="harness-index-") as tmp:
            index = Path(tmp) / "index"
            env = {"GIT_INDEX_FILE": str(index)}
            with _bookkeeping("read the workspace's changes"):
                if in_place:
                    git(self.path, *add_all(scope))
                if self._index.exists():
                    # copy2 keeps the index's mtime: git compares it with each file's mtime to
                    # spot "racily clean" entries (changed within the same second, same size),
                    # and a fresh mtime would hide such edits from the diff.
                    shutil.copy2(self._index, index)
                if not in_place:
                    git(self.path, *add_all(scope), env=env)
            yield env

    def _diffs(self, env: Mapping[str, str], *diff_args: tuple[str, ...]) -> list[str]:
        """``git diff --cached <base>`` of the index ``env`` names, once per argument tuple."""
        assert self.base_commit is not None
        # Run from the workspace with --relative: paths are the workspace's own and files
        # outside it (when the workspace is a folder inside the repository) are left out.
        return [
            git(self.path, "diff", "--cached", "--relative", *args, self.base_commit, env=env)
            for args in diff_args
        ]


_DIFF = ("--no-color", "--no-ext-diff", "--find-renames")
_NAMES = ("--name-only", "-z", "--no-renames")


@contextlib.contextmanager
def _bookkeeping(what: str) -> Iterator[None]:
    """A git failure while the harness records a round (never the user's configuration: the
    workspace's files, a nested repository without a commit, a full disk) as a
    :class:`BookkeepingError` naming what could not be done."""
    try:
        yield
    except (GitIsolationError, OSError) as exc:
        raise BookkeepingError(f"the harness could not {what}: {exc}") from exc


def _split_names(names: str) -> list[str]:
    return [name for name in names.split("\0") if name]
