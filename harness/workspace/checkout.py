"""A clean checkout of what a round delivers: where the gates judge it.

The gates never run in the agent's working folder. They judge a folder holding exactly the files
a round commit holds (``git add -A``, so ``.gitignore`` and ``.git/info/exclude`` leave files out,
and so do byte code and tool caches), with every protected path as it was at the base commit
(a protected file the round added is left out, one it deleted is back). A ``conftest.py`` hidden
from git, a cache or any other leftover cannot take part in a verdict. The one ignored folder
delivered is the loop's work product, :data:`WORK_DIR`.

That folder is a :class:`ReusedCheckout`: made once per run, then brought from the tree it holds
to the next one by writing only the files that differ (``git read-tree -m -u OLD NEW``), so a
round's cost follows its change, not the repository's size. Before each use, whatever the last
gate run left is undone: tracked files it changed or removed are checked out again (``git
diff-files``: their stat data, ctime included, differs from the checkout's own index) and every
other file or folder is removed (``git clean -ffdx``, nested repositories too, then every
``.git``, which git never lists). Anything that fails on the way starts a fresh folder.

A run in its own worktree keeps the folder among its repository's run worktrees, in
``.checkouts/``, where the agent's sandbox cannot write; at the end of the run the folder is
parked there (at most :data:`MAX_PARKED`), and the next run's first use takes it and brings it to
its tree the same way, from the tree its own index holds, instead of writing every file again.
Each folder there has a lock (``holder.lock``) its run holds while it uses or takes it, which the
kernel releases when that process ends: ``harness clean`` removes a folder whose lock is free.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import tempfile
import time
import weakref
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from harness.memory.lock import LockHeld, LoopLock
from harness.tools.paths import protecting_pattern
from harness.workspace.caches import add_all
from harness.workspace.git_cmd import GitIsolationError, git, run_git
from harness.workspace.parked import MAX_PARKED, real_folders
from harness.workspace.removal import remove_tree

WORK_DIR = Path(".harness") / "work"
"""A loop's work product that git ignores (a draft, findings): the gates judge it all the same.

It is copied into the checkout as it is in the workspace (links as links). Nothing there can
switch a check off: pytest does not collect dot folders, and protected paths lie elsewhere."""

CHECKOUTS = ".checkouts"
"""The folder, among a repository's run worktrees, holding the runs' reused checkouts."""
_TREES_KEPT = 4  # trees whose folder listing a checkout keeps (the base's is asked for again)
_IN_USE = "inuse-"  # a checkout a run holds; the others in the pool are parked
MAKING_SECONDS = 600
"""How long a checkout in use without its lock file yet is taken to be in the making."""
_HOLDER = "holder"
"""In each checkout of a pool, ``holder.lock``: a :class:`LoopLock` its holder keeps, which the
kernel releases when that process ends, however it ends."""


def prefix_of(root: Path, workspace: Path) -> str:
    """``workspace``'s path in the checkout whose top is ``root``: ``""`` or ``"app/"``."""
    prefix = workspace.resolve().relative_to(root.resolve()).as_posix()
    return "" if prefix == "." else prefix + "/"


def delivered_tree(
    root: Path,
    workspace: Path,
    *,
    base: str,
    protect: Sequence[str],
    index: Path | None = None,
    commit: str | None = None,
) -> str:
    """The tree object a round delivers: ``commit``'s, or the checkout's files as ``git add -A``
    takes them, with every protected path as at ``base``.

    ``index`` is the checkout's own index (its stat cache makes ``add -A`` fast).
    """
    with tempfile.TemporaryDirectory(prefix="harness-index-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        if commit is not None:
            git(root, "read-tree", commit, env=env)
        else:
            if index is not None and index.exists():
                # mtime kept: see Workspace._staged
                shutil.copy2(index, env["GIT_INDEX_FILE"])
            git(root, *add_all(), env=env)
        return staged_tree(root, workspace, base=base, protect=protect, env=env)


def staged_tree(
    root: Path, workspace: Path, *, base: str, protect: Sequence[str], env: Mapping[str, str]
) -> str:
    """The tree object the index ``env`` names (``GIT_INDEX_FILE``, a throwaway one: it is
    changed) holds, with every protected path as at ``base``."""
    _restore_protected(root, prefix_of(root, workspace), base, protect, env)
    return git(root, "write-tree", env=env).strip()


def changed_paths(root: Path, workspace: Path, *, base: str, tree: str) -> tuple[str, ...]:
    """The paths (relative to ``workspace``) whose files differ between ``base`` and ``tree``."""
    prefix = prefix_of(root, workspace)
    names = git(root, "diff-tree", "-r", "-z", "--name-only", "--no-renames", base, tree,
                *(("--", f":(literal){prefix}") if prefix else ()))  # fmt: skip
    return tuple(name[len(prefix) :] for name in names.split("\0") if name)


def tree_of(root: Path, commit: str) -> str:
    """The tree object of ``commit``."""
    return git(root, "rev-parse", "--verify", f"{commit}^{{tree}}").strip()


class ReusedCheckout:
    """One folder outside the workspace, brought to each tree the gates judge and reused.

    Its files are written by git from its own index (beside them, in the same private folder);
    it has no ``.git``. With a ``pool`` (a folder the agent cannot write), the folder lives
    there and :meth:`close` with ``park`` leaves it for the next run's first use (which takes
    one unless made with ``take_parked`` off); otherwise it is a temporary folder.
    :meth:`close` removes it (so does the end of the process).
    """

    def __init__(
        self, root: Path, workspace: Path, pool: Path | None = None, *, take_parked: bool = True
    ) -> None:
        self.root = root
        self.workspace = workspace
        self.prefix = prefix_of(root, workspace)
        self.pool = pool
        self.take_parked = take_parked  # False: the first use writes a checkout of its own
        self._git_dir: str | None = None
        self._folder: Path | None = None
        self._removal: weakref.finalize | None = None
        self._lock: LoopLock | None = None  # held while the folder is this object's, in a pool
        self._tree: str | None = None  # what the folder holds; None: nothing yet
        self._folders: dict[str, list[str]] = {}  # the folders of each tree listed so far
        self.fresh_checkouts = 0
        """How many times the whole tree was written (the first use, and each start afresh)."""

    @contextlib.contextmanager
    def holding(self, tree: str, *, work: bool = True) -> Iterator[Path]:
        """The folder standing for the workspace, holding exactly ``tree`` and, with ``work``,
        the workspace's :data:`WORK_DIR`; it stays (for the next use) when the block ends."""
        try:
            top = self._update(tree)
        except (GitIsolationError, OSError):
            top = self._fresh(tree)
        target = top / self.prefix
        target.mkdir(parents=True, exist_ok=True)
        source = self.workspace / WORK_DIR
        if work and source.is_dir() and not source.is_symlink():
            shutil.copytree(source, target / WORK_DIR, symlinks=True, dirs_exist_ok=True)
        yield target

    def close(self, *, park: bool = False) -> None:
        """Remove the folder, or with ``park`` leave it in the pool for a later run (while
        fewer than :data:`MAX_PARKED` wait there); the next use starts afresh."""
        folder, removal = self._folder, self._removal
        self._folder, self._removal, self._tree = None, None, None
        if folder is None or removal is None:
            return
        if park and self.pool is not None and len(parked_checkouts(self.pool)) < MAX_PARKED:
            with contextlib.suppress(OSError):
                os.rename(folder, self.pool / secrets.token_hex(4))
                removal.detach()
                self._release()  # only once parked: no one takes it half-way
                return
        removal()
        self._release()

    def _git(self, *args: str, stdin: str | None = None) -> str:
        assert self._folder is not None
        if self._git_dir is None:
            self._git_dir = git(self.root, "rev-parse", "--absolute-git-dir").strip()
        env = {
            "GIT_DIR": self._git_dir,
            "GIT_WORK_TREE": str(self._top),
            "GIT_INDEX_FILE": str(self._folder / "index"),
        }
        return git(self._top, *args, env=env, stdin=stdin)

    @property
    def _top(self) -> Path:
        assert self._folder is not None
        return self._folder / "tree"

    def _hold(self, folder: Path, lock: LoopLock | None = None) -> None:
        """Hold ``folder``, locked by ``lock`` (a pool's checkout) or locked now."""
        self._folder = folder
        self._removal = weakref.finalize(self, remove_tree, folder)
        if self.pool is not None:
            self._lock = lock or LoopLock(folder / _HOLDER).acquire()

    def _release(self) -> None:
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.release()

    def _fresh(self, tree: str) -> Path:
        """A new folder with every file of ``tree`` written."""
        self.close()
        if self.pool is None:
            self._hold(Path(tempfile.mkdtemp(prefix="harness-verify-")))
        else:
            self.pool.mkdir(parents=True, exist_ok=True)
            self._hold(Path(tempfile.mkdtemp(prefix=_IN_USE, dir=self.pool)))
        self._top.mkdir()
        self._git("read-tree", tree)
        # -u keeps each file's stat data in the index: the next use spots what a gate changed.
        self._git("checkout-index", "--all", "--force", "-u")
        self._tree = tree
        self.fresh_checkouts += 1
        return self._top

    def _take_parked(self) -> bool:
        """Hold a checkout an earlier run parked, at the tree its index holds; False if none."""
        pool = self.pool if self.take_parked else None
        for parked in parked_checkouts(pool) if pool is not None else []:
            folder = parked.with_name(_IN_USE + secrets.token_hex(4))
            try:  # the claim: the lock first (another run's, or `harness clean`'s, fails) ...
                lock = LoopLock(parked / _HOLDER).acquire()
            except (LockHeld, OSError):
                continue
            try:  # ... then the name, which says it is in use
                os.rename(parked, folder)
            except OSError:
                lock.release()
                continue
            self._hold(folder, lock)
            try:
                self._tree = self._git("write-tree").strip()
            except GitIsolationError:
                self.close()
                continue
            return True
        return False

    def _tree_folders(self, tree: str) -> list[str]:
        """Every folder of ``tree``, each after its parent (a tree never changes: listed once)."""
        if tree not in self._folders:
            listed = self._git("ls-tree", "-r", "-d", "-z", "--name-only", tree).split("\0")
            if len(self._folders) >= _TREES_KEPT:
                del self._folders[next(iter(self._folders))]
            self._folders[tree] = [folder for folder in listed if folder]
        return self._folders[tree]

    def _update(self, tree: str) -> Path:
        """The folder brought from what it holds to ``tree``, leftovers undone; raises when it
        cannot be (there is none yet, or git fails)."""
        if (self._folder is None or self._tree is None) and not self._take_parked():
            raise GitIsolationError("no checkout to reuse yet")
        held = self._tree
        assert held is not None
        changed = self._git("diff-files", "--name-only", "-z")
        self._git("clean", "-ffdxq")
        _remove_git_entries(self._top, self._tree_folders(held))
        if changed:
            self._git("checkout-index", "--force", "-u", "-z", "--stdin", stdin=changed)
        if tree != held:
            self._git("read-tree", "-m", "-u", held, tree)
            self._tree = tree
        return self._top


def parked_checkouts(pool: Path) -> list[Path]:
    """The checkouts parked in ``pool`` (not those a run holds)."""
    return [p for p in real_folders(pool) if not p.name.startswith(_IN_USE)]


def abandoned_checkouts(pool: Path) -> list[Path]:
    """The checkouts in ``pool`` that a run held when it ended without handing them back (it
    was killed): marked in use, but their holder's lock is free."""
    return [p for p in real_folders(pool) if p.name.startswith(_IN_USE) and _unheld(p)]


def remove_unheld(folder: Path) -> bool:
    """Remove a checkout of a pool (parked or abandoned) unless a run holds it (or is taking
    it); whether it was removed."""
    if not folder.is_dir():
        return False  # taken meanwhile (and renamed), or removed
    try:
        lock = LoopLock(folder / _HOLDER).acquire()
    except LockHeld:
        return False
    try:
        gone = remove_tree(folder)
    finally:
        lock.release()
    return gone


def _unheld(folder: Path) -> bool:
    """Whether no process holds the checkout ``folder`` (its lock file is there, and free).

    One without its lock file is left alone while it is young (:data:`MAKING_SECONDS`): it is
    being made this very moment; an older one is a run's killed while making it."""
    if not (folder / f"{_HOLDER}.lock").is_file():
        try:
            return time.time() - folder.lstat().st_mtime > MAKING_SECONDS
        except OSError:
            return False
    try:
        LoopLock(folder / _HOLDER).acquire().release()
    except LockHeld:
        return False
    return True


def _remove_git_entries(top: Path, folders: Sequence[str]) -> None:
    """Remove the ``.git`` of ``top`` and of each of its tracked ``folders`` (each listed after
    the folder holding it), the only places one can be once ``git clean -ffdx`` ran: that clean
    removes every other folder, ``.git`` and all, but never lists a ``.git`` itself (and a
    checkout written by git never holds one). A folder replaced by a link is never entered."""
    passed: set[str] = set()  # the folders that are folders (no link on the way)
    for folder in ("", *folders):
        here = top / folder
        parent = folder.rpartition("/")[0]
        if folder and (parent not in passed or here.is_symlink() or not here.is_dir()):
            continue
        passed.add(folder)
        remove_tree(here / ".git")  # whatever the repository's code run by a gate put in it


@contextlib.contextmanager
def clean_checkout(
    root: Path,
    workspace: Path,
    *,
    base: str,
    protect: Sequence[str],
    index: Path | None = None,
    at_base: bool = False,
    commit: str | None = None,
) -> Iterator[Path]:
    """A temporary copy of ``workspace`` as a round commit would hold it; removed on exit.

    ``root`` is the top of the checkout and ``workspace`` a folder in it (or the top itself);
    ``protect`` patterns are relative to ``workspace``. ``index`` is the checkout's own index.
    With ``at_base`` the copy is the base commit itself; with ``commit`` it is that commit
    (protected paths still as at ``base``). Yields the copy's folder that stands for
    ``workspace``. A run's rounds use one :class:`ReusedCheckout` instead.
    """
    tree = (
        tree_of(root, base)
        if at_base
        else delivered_tree(root, workspace, base=base, protect=protect, index=index, commit=commit)
    )
    checkout = ReusedCheckout(root, workspace)
    try:
        with checkout.holding(tree, work=not at_base) as target:
            yield target
    finally:
        checkout.close()


def file_at(root: Path, commit: str, path: str) -> str | None:
    """The text of ``path`` (relative to the top of the checkout) at ``commit``; None if absent."""
    proc = run_git(root, ("show", f"{commit}:{path}"), None)
    return proc.stdout if proc.returncode == 0 else None


def _restore_protected(
    root: Path, prefix: str, base: str, protect: Sequence[str], env: Mapping[str, str]
) -> None:
    """Put every protected path in the index as it is at ``base``."""
    if not protect:
        return

    def protected(path: str) -> bool:
        return path.startswith(prefix) and (
            protecting_pattern(protect, path[len(prefix) :]) is not None
        )

    # Nothing outside the workspace is protected: list only its folder (ls-tree takes a path).
    listed = ("--", f":(literal){prefix}") if prefix else ()
    staged = git(root, "ls-files", "--stage", "-z", *listed, env=env).split("\0")
    drop = []
    for entry in filter(None, staged):  # "<mode> <object> <stage>\t<path>"
        info, _, path = entry.partition("\t")
        if protected(path):  # mode 0 and a null object: the path leaves the index
            drop.append(f"0 {'0' * len(info.split(' ')[1])}\t{path}")
    tree = git(
        root, "ls-tree", "-r", "-z", "--full-tree", base, *(("--", prefix) if prefix else ())
    )
    at_base = [line for line in tree.split("\0") if line and protected(line.split("\t", 1)[1])]
    if drop or at_base:  # one pass over the index: removals first, then the base's entries
        lines = "\0".join([*drop, *at_base]) + "\0"
        git(root, "update-index", "-z", "--index-info", env=env, stdin=lines)
