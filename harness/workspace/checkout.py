"""A clean checkout of what a round delivers: where the gates judge it.

The gates never run in the agent's working folder. :func:`clean_checkout` writes, into a fresh
temporary folder, exactly the files a round commit holds (``git add -A``, so ``.gitignore`` and
``.git/info/exclude`` leave files out, and so do byte code and tool caches), with every protected path as it was at the base commit
(a protected file the round added is left out, one it deleted is back). A ``conftest.py`` hidden
from git, a cache or any other leftover cannot take part in a verdict. The one ignored folder
delivered is the loop's work product, :data:`WORK_DIR`.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from harness.tools.paths import protecting_pattern
from harness.workspace.caches import add_all
from harness.workspace.git_cmd import git, run_git

WORK_DIR = Path(".harness") / "work"
"""A loop's work product that git ignores (a draft, findings): the gates judge it all the same.

It is copied into the checkout as it is in the workspace (links as links). Nothing there can
switch a check off: pytest does not collect dot folders, and protected paths lie elsewhere."""


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
    ``protect`` patterns are relative to ``workspace``. ``index`` is the checkout's own index
    (its stat cache makes ``add -A`` fast). With ``at_base`` the copy is the base commit itself;
    with ``commit`` it is that commit (protected paths still as at ``base``).
    Yields the copy's folder that stands for ``workspace``.
    """
    prefix = workspace.resolve().relative_to(root.resolve()).as_posix()
    prefix = "" if prefix == "." else prefix + "/"
    with tempfile.TemporaryDirectory(prefix="harness-verify-") as tmp:
        temp_index = Path(tmp) / "index"
        env = {"GIT_INDEX_FILE": str(temp_index)}
        if at_base:
            git(root, "read-tree", base, env=env)
        elif commit is not None:
            git(root, "read-tree", commit, env=env)
            _restore_protected(root, prefix, base, protect, env)
        else:
            if index is not None and index.exists():
                shutil.copy2(index, temp_index)  # mtime kept: see Workspace._against_base
            git(root, *add_all(), env=env)
            _restore_protected(root, prefix, base, protect, env)
        tree = Path(tmp) / "tree"
        tree.mkdir()
        # checkout-index wants the prefix to end in a slash; it writes no .git folder.
        git(root, "checkout-index", "--all", "--force", f"--prefix={tree}/", env=env)
        target = tree / prefix
        target.mkdir(parents=True, exist_ok=True)
        work = workspace / WORK_DIR
        if not at_base and work.is_dir() and not work.is_symlink():
            shutil.copytree(work, target / WORK_DIR, symlinks=True, dirs_exist_ok=True)
        yield target


def file_at(root: Path, commit: str, path: str) -> str | None:
    """The text of ``path`` (relative to the top of the checkout) at ``commit``; None if absent."""
    proc = run_git(root, ("show", f"{commit}:{path}"), None)
    return proc.stdout if proc.returncode == 0 else None


def _restore_protected(
    root: Path, prefix: str, base: str, protect: Sequence[str], env: dict[str, str]
) -> None:
    """Put every protected path in the index as it is at ``base``."""
    if not protect:
        return

    def protected(path: str) -> bool:
        return path.startswith(prefix) and (
            protecting_pattern(protect, path[len(prefix) :]) is not None
        )

    current = [p for p in git(root, "ls-files", "-z", env=env).split("\0") if p]
    drop = [path for path in current if protected(path)]
    if drop:
        git(root, "update-index", "--force-remove", "-z", "--stdin", env=env, stdin="\0".join(drop))
    at_base = [
        line
        for line in git(root, "ls-tree", "-r", "-z", "--full-tree", base).split("\0")
        if line and protected(line.split("\t", 1)[1])
    ]
    if at_base:
        git(root, "update-index", "-z", "--index-info", env=env, stdin="\0".join(at_base) + "\0")
