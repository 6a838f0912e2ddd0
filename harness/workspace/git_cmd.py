"""Running git: the one place a git command is started, with a clean environment and retries
(and the options of :mod:`~harness.workspace.git_hardening`, which reads the config itself).

Commands run with the C locale, without optional locks or prompts, and without the ``GIT_DIR``
family a calling git process (a hook, say) may have set. While another git process holds a lock (or is half-way
through registering a worktree), the command is retried for up to about five seconds.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from harness.core.errors import ConfigError
from harness.workspace.git_hardening import hardening

_INHERITED_GIT_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_PREFIX")
# Another git process holds a lock, or is half-way through registering (or removing) a worktree.
_CONTENTION = re.compile(
    r"\.lock'?: File exists|could not lock config file|failed to read .*/worktrees/"
    r"|Invalid path '[^']*/worktrees/[^']*': No such file or directory"
)
IDENTITY_ENV = {  # who the harness's own commits are by
    "GIT_AUTHOR_NAME": "harness",
    "GIT_AUTHOR_EMAIL": "harness@localhost",
    "GIT_COMMITTER_NAME": "harness",
    "GIT_COMMITTER_EMAIL": "harness@localhost",
}
_RETRIES = 80  # at most ~5 s of waiting for another git process
_DIFFING = frozenset({"diff", "log", "show", "format-patch"})


class GitIsolationError(ConfigError):
    """The repository cannot host, or hand back, a run as asked; the message names the path."""


def run_git(
    cwd: Path, args: tuple[str, ...], env: Mapping[str, str] | None, *, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run git, retrying while another git process is in the way; ``stdin`` is its input.

    No repository-configured program runs: see :func:`hardening`.
    """
    full_env = {k: v for k, v in os.environ.items() if k not in _INHERITED_GIT_ENV}
    full_env.update(LC_ALL="C", LANGUAGE="C", GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0")
    full_env.update(env or {})
    options = hardening(cwd, full_env, args[0] if args else "") if cwd.is_dir() else []
    if args and args[0] in _DIFFING:  # diff.external would run a program for each file
        args = (args[0], "--no-ext-diff", *args[1:])
    for _ in range(_RETRIES):
        proc = subprocess.run(
            ["git", *options, *args],
            cwd=cwd,
            env=full_env,
            input=stdin,
            capture_output=True,
            encoding="utf-8",
            errors="replace",
        )
        if proc.returncode == 0 or not contended(proc.stderr):
            break
        time.sleep(0.02 + random.random() * 0.08)
    return proc


def contended(stderr: str) -> bool:
    """Whether git failed only because another git process was in the way (worth a retry)."""
    return _CONTENTION.search(stderr) is not None


def git(
    cwd: Path, *args: str, env: Mapping[str, str] | None = None, stdin: str | None = None
) -> str:
    """Stdout of a git command that must succeed."""
    proc = run_git(cwd, args, env, stdin=stdin)
    if proc.returncode != 0:
        raise GitIsolationError(f"git {' '.join(args)} failed in {cwd}: {proc.stderr.strip()}")
    return proc.stdout


def git_test(cwd: Path, *args: str, env: Mapping[str, str] | None = None) -> bool:
    """A git command used as a predicate: exit 0 is yes, 1 is no, anything else an error."""
    proc = run_git(cwd, args, env)
    if proc.returncode not in (0, 1):
        raise GitIsolationError(f"git {' '.join(args)} failed in {cwd}: {proc.stderr.strip()}")
    return proc.returncode == 0


def status(root: Path, *, untracked: bool = True, exclude: Sequence[str] = ()) -> list[str]:
    """``git status --porcelain`` lines of a checkout (ignored files and ``exclude``, paths
    relative to ``root``, left out)."""
    mode = "--untracked-files=normal" if untracked else "--untracked-files=no"
    spec = ("--", ".", *(f":(exclude,literal){path}" for path in exclude)) if exclude else ()
    return git(root, "status", "--porcelain", mode, *spec).splitlines()


def describe_dirty(lines: list[str]) -> str:
    """The paths of :func:`status` lines, the first five and how many more."""
    shown = ", ".join(line[3:] for line in lines[:5])
    return shown + (f" and {len(lines) - 5} more" if len(lines) > 5 else "")


def branch_exists(root: Path, branch: str) -> bool:
    """Whether ``refs/heads/<branch>`` exists."""
    return git_test(root, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}")


def claim_branch(root: Path, branch: str, head: str) -> bool:
    """Create ``branch`` at ``head``; False when that name is taken."""
    proc = run_git(root, ("branch", "--no-track", branch, head), None)
    if proc.returncode != 0 and "already exists" in proc.stderr:
        return False
    if proc.returncode != 0:
        raise GitIsolationError(
            f"could not create branch {branch} in {root}: {proc.stderr.strip()}"
        )
    return True


def rev_parse(root: Path, rev: str) -> str | None:
    """The object ``rev`` names (``git rev-parse --verify``), or None when it names none."""
    proc = run_git(root, ("rev-parse", "--verify", "--quiet", rev), None)
    return proc.stdout.strip() if proc.returncode == 0 else None


def config_get(root: Path, key: str) -> str | None:
    """The repository config value of ``key``, or None when it is not set."""
    proc = run_git(root, ("config", "--get", key), None)
    return proc.stdout.strip() if proc.returncode == 0 else None


def checkouts(root: Path) -> dict[str, Path]:
    """Which worktree (main one included) has each branch ref checked out."""
    held: dict[str, Path] = {}
    current: Path | None = None
    for line in git(root, "worktree", "list", "--porcelain").splitlines():
        if line.startswith("worktree "):
            current = Path(line.removeprefix("worktree "))
        elif line.startswith("branch ") and current is not None:
            held[line.removeprefix("branch ")] = current
    return held


def tracked_files(checkout: Path, folder: Path) -> list[str]:
    """The files under ``folder`` that the repository holding ``checkout`` tracks (in its index
    or in ``HEAD``), as git names them; none when ``folder`` lies outside that repository or
    ``checkout`` is in none."""
    found: set[str] = set()
    for args in (
        ("ls-files", "-z", "--full-name", "--"),
        ("ls-tree", "-r", "-z", "--full-name", "--name-only", "HEAD", "--"),
    ):
        listed = run_git(checkout, (*args, str(folder)), None)
        if listed.returncode == 0:
            found.update(name for name in listed.stdout.split("\0") if name)
    return sorted(found)
