"""``harness clean``: remove the worktrees and branches of finished or abandoned runs.

For each loop found (by its loop.toml) in a git repository, under the loop's lock so a running
loop is never touched:

* the run progress.md names, while the loop is in progress or escalated, is resumable by the
  next ``harness run``: kept, worktree and branch;
* the run of a loop that passed keeps its branch (the work, unless it was merged) but not its
  worktree; when ``harness restore`` has since put a round that did not pass on the branch, it
  is treated as any other run's below (kept only for the passed round in its history);
* any other run whose branch holds a passed round that no branch of the user's holds (a passed
  run set aside by ``--restart``) keeps its branch too, but not its worktree;
* every other run of the loop (set aside by ``--restart``, killed during start-up, ...) loses its
  worktree and its branch;
* the worktrees passed runs parked for the next run (:mod:`harness.workspace.parked`) go, and so
  do the gates' checkouts finished runs parked (:mod:`harness.workspace.checkout`) and those a
  run killed while holding them left (their holder's lock is free); one a live run holds stays;
* so do those parked beside it for a clone that is gone (:mod:`harness.workspace.orphans`);
* and the temporary folders (an external agent's home, the sandbox's, an MCP server's) that a
  process of the user's left when it was killed (:mod:`harness.core.held_folders`).

A branch kept for its passed work goes when it is named (``--branch``, which also limits the
cleaning to the branches named) or with ``--include-passed``.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from harness.cli.discover import Unreadable, find_loops
from harness.cli.exit_codes import EXIT_PASSED, EXIT_USAGE
from harness.core import held_folders
from harness.core.errors import ConfigError
from harness.memory.lock import LockHeld, LoopLock
from harness.memory.progress import Progress
from harness.memory.progress_terms import Status
from harness.memory.run_state import RunState
from harness.outer.best import RoundMark, best_round
from harness.spec import LoopSpec
from harness.workspace import cleanup
from harness.workspace.checkout import CHECKOUTS, abandoned_checkouts, parked_checkouts
from harness.workspace.orphans import orphans, remove_orphan
from harness.workspace.parked import parked_worktrees


def clean_loops(
    path: Path, *, dry_run: bool, branches: Collection[str] = (), include_passed: bool = False
) -> int:
    """Clean every loop under ``path``; print one line per thing removed or kept. Exit 2 when
    ``path`` is a loop.toml that cannot be read.

    ``branches``, when given, are the only run branches cleaned, passed work or not.
    """
    loops, unreadable = find_loops(path)
    configs = [loop.config.file for loop in loops if loop.config is not None]
    specs = []
    for config in configs:  # what is removed depends on the whole spec: read it all
        try:
            specs.append(LoopSpec.from_toml(config))
        except ConfigError as exc:
            unreadable.append(Unreadable(config, str(exc)))
    for problem in unreadable:
        print(f"{problem.path}: skipped, cannot be read: {problem.reason}")
    if not configs:
        print(f"no loop.toml found under {path}; nothing to clean")
    named = frozenset(branches)
    seen: set[str] = set()  # the run branches found
    for spec in specs:
        try:
            with LoopLock(spec.progress_path()):
                lines = _clean_loop(spec, dry_run, named, include_passed=include_passed, seen=seen)
                for line in lines:
                    print(line)
        except LockHeld as exc:
            print(f"{spec.name}: running, left alone ({exc})")
    for branch in sorted(named - seen):
        print(f"{branch}: not a run branch of the loops under {path}; nothing done")
    if not branches:
        for folder in held_folders.sweep(dry_run=dry_run):
            verb = "would remove" if dry_run else "removed"
            print(f"tidy: {verb} {folder} (a temporary folder its process left when it was killed)")
    # a loop.toml named on its own that cannot be read is bad usage; in a folder of loops, the
    # others are still cleaned and the unreadable one is said
    return EXIT_USAGE if path.is_file() and unreadable else EXIT_PASSED


def _clean_loop(
    spec: LoopSpec, dry_run: bool, named: frozenset[str], *, include_passed: bool, seen: set[str]
) -> list[str]:
    """Clean ``spec``'s runs (only the branches ``named``, when it names any), adding to
    ``seen`` each run branch found; what was removed or kept."""
    name, progress = spec.name, spec.progress_path()
    removed = "would remove" if dry_run else "removed"
    workspace = spec.root / spec.workspace
    repo = cleanup.top_of(workspace) if workspace.is_dir() else None
    if repo is None:
        return []
    try:
        current, status, failing = _current_run(progress)
    except ConfigError as exc:  # which run is resumable is unknown: remove nothing
        return [f"{name}: skipped, its progress file cannot be read: {exc}"]
    lines = []
    for run in cleanup.run_branches(repo, name, progress):
        if named and run.branch not in named:
            continue
        seen.add(run.branch)
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
        kept = (
            None
            if include_passed or run.branch in named
            else _passed_work(
                repo,
                run.branch,
                current=run.branch == current and status is Status.PASSED,
                failing=failing if run.branch == current else None,
            )
        )
        if kept is not None:
            lines.append(f"{name}: kept {run.branch}: {kept}")
            continue
        if not dry_run:
            cleanup.remove_branch(repo, run.branch)
        lines.append(f"{name}: {removed} branch {run.branch}")
    if not named:
        lines += _debris(repo, name, progress, dry_run=dry_run)
    if not lines:
        lines.append(f"{name}: nothing to clean")
    return lines


def _debris(repo: Path, name: str, progress: Path, *, dry_run: bool) -> list[str]:
    """Remove the folders no run owns: strays of this loop's runs, parked worktrees and
    checkouts."""
    removed = "would remove" if dry_run else "removed"
    lines = []
    for folder in cleanup.stray_worktree_folders(repo, name, progress):
        if not dry_run:
            cleanup.remove_folder(folder)
        lines.append(f"{name}: {removed} stray folder {folder}")
    place = cleanup.place_of(repo)
    for parked in parked_worktrees(place):
        if not dry_run:
            cleanup.remove_worktree(repo, parked)
        lines.append(f"{name}: {removed} parked worktree {parked}")
    for folder in orphans(repo.parent):
        clone = repo.parent / folder.parent.parent.name
        if dry_run or remove_orphan(folder):
            lines.append(f"{name}: {removed} {folder} (parked for {clone}, which is gone)")
    checkouts = [("parked", p) for p in parked_checkouts(place / CHECKOUTS)]
    checkouts += [("abandoned", p) for p in abandoned_checkouts(place / CHECKOUTS)]
    for kind, folder in checkouts:
        if dry_run or cleanup.remove_checkout(folder):
            lines.append(f"{name}: {removed} {kind} checkout {folder}")
        else:
            lines.append(f"{name}: kept {kind} checkout {folder}: a run took it meanwhile")
    return lines


def _passed_work(
    repo: Path, branch: str, *, current: bool, failing: tuple[int, int] | None
) -> str | None:
    """Why ``branch`` is kept for the passed work it holds; None when it holds none unmerged.

    ``current``: the loop's progress file names this run, and it passed; ``failing``: the round
    ``harness restore`` put on it since, which did not pass, and the round that passed.
    """
    if failing is not None:
        if cleanup.unmerged_pass(repo, branch) is None:
            return None
        held, passed = failing
        return (
            f"it holds round {held} (put back by `harness restore`; it did not pass) over the "
            f"passed round {passed} (`harness restore --round {passed}` brings that back, or "
            f"`harness clean --branch {branch}`)"
        )
    if current:
        return f"it holds the passed work (merge it, or `git branch -D {branch}`)"
    if cleanup.unmerged_pass(repo, branch) is not None:
        return (
            "it holds a passed round that no branch of yours holds "
            f"(merge it, or `harness clean --branch {branch}`)"
        )
    return None


def _current_run(
    progress: Path,
) -> tuple[str | None, Status | None, tuple[int, int] | None]:
    """The branch and status the loop's progress file records (None, None when there is none),
    and, when ``harness restore`` put a round that did not pass on that branch, that round and
    the best (the passed one)."""
    if not progress.exists():
        return None, None, None
    loaded = Progress.load(progress)
    state = RunState.read(loaded)
    marks = {a.round: RoundMark.of_attempt(a) for a in loaded.attempts}
    held = marks.get(state.restored) if state.restored is not None else None
    best = best_round(marks.values())
    failing = None
    if held is not None and not held.passed and best is not None and best.passed:
        failing = (held.round, best.round)
    return state.branch, loaded.status, failing
