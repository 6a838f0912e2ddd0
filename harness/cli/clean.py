"""``harness clean``: remove the worktrees and branches of finished or abandoned runs.

For each loop found (by its loop.toml) in a git repository, under the loop's lock so a running
loop is never touched:

* the run progress.md names, while the loop is in progress or escalated, is resumable by the
  next ``harness run``: kept, worktree and branch;
* the run of a loop that passed keeps its branch (the work, unless it was merged) but not its
  worktree;
* every other run of the loop (set aside by ``--restart``, killed during start-up, ...) loses its
  worktree and its branch.
"""

from __future__ import annotations

from pathlib import Path

from harness.cli.discover import FoundLoop, find_loops
from harness.cli.exit_codes import EXIT_PASSED
from harness.core.errors import ConfigError
from harness.memory.lock import LockHeld, LoopLock
from harness.memory.progress import Progress
from harness.memory.progress_items import Status
from harness.memory.run_state import RunState
from harness.workspace import cleanup


def clean_loops(path: Path, *, dry_run: bool) -> int:
    """Clean every loop under ``path``; print one line per thing removed or kept."""
    loops, unreadable = find_loops(path)
    for problem in unreadable:
        print(f"{problem.path}: skipped, cannot be read: {problem.reason}")
    configured = [loop for loop in loops if loop.config is not None]
    if not configured:
        print(f"no loop.toml found under {path}; nothing to clean")
    for loop in configured:
        try:
            with LoopLock(loop.progress):
                for line in _clean_loop(loop, dry_run=dry_run):
                    print(line)
        except LockHeld as exc:
            print(f"{_name(loop)}: running, left alone ({exc})")
    return EXIT_PASSED


def _name(loop: FoundLoop) -> str:
    assert loop.config is not None
    return loop.config.name


def _clean_loop(loop: FoundLoop, *, dry_run: bool) -> list[str]:
    assert loop.config is not None
    assert loop.root is not None
    name = loop.config.name
    removed = "would remove" if dry_run else "removed"
    workspace = loop.root / loop.config.workspace
    repo = cleanup.top_of(workspace) if workspace.is_dir() else None
    if repo is None:
        return []
    try:
        current, status = _current_run(loop.progress)
    except ConfigError as exc:  # which run is resumable is unknown: remove nothing
        return [f"{name}: skipped, its progress file cannot be read: {exc}"]
    lines = []
    for run in cleanup.run_branches(repo, name):
        resumable = run.branch == current and status in (Status.IN_PROGRESS, Status.ESCALATED)
        if resumable:
            lines.append(f"{name}: kept {run.branch}: resumable by `harness run`")
            continue
        if run.worktree is not None and run.worktree.resolve() == repo:
            lines.append(f"{name}: kept {run.branch}: checked out in {repo}; switch away first")
            continue
        if run.worktree is not None:
            if not dry_run:
                cleanup.remove_worktree(repo, run.worktree)
            lines.append(f"{name}: {removed} worktree {run.worktree}")
        if run.branch == current and status is Status.PASSED:
            lines.append(
                f"{name}: kept {run.branch}: it holds the passed work "
                f"(merge it, or `git branch -D {run.branch}`)"
            )
            continue
        if not dry_run:
            cleanup.remove_branch(repo, run.branch)
        lines.append(f"{name}: {removed} branch {run.branch}")
    for folder in cleanup.stray_worktree_folders(repo, name):
        if not dry_run:
            cleanup.remove_folder(folder)
        lines.append(f"{name}: {removed} stray folder {folder}")
    if not lines:
        lines.append(f"{name}: nothing to clean")
    return lines


def _current_run(progress: Path) -> tuple[str | None, Status | None]:
    """The branch and status the loop's progress file records (None, None when there is none)."""
    if not progress.exists():
        return None, None
    loaded = Progress.load(progress)
    return RunState.read(loaded).branch, loaded.status
