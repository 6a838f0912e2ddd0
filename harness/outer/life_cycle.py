"""What a run does around its rounds, under the loop's lock, for every caller alike.

:meth:`~harness.outer.loop.OuterLoop.run` does all of it, so a Python caller and ``harness run``
start and end a run the same way:

* A restart sets aside progress.md, the spend record and the work file a file-judged loop
  produces (``critic_artifact = ArtifactFile(...)``): a new run must make it anew, not pass on an
  earlier run's file. It names the earlier run's branch it leaves behind (no longer resumable, it
  is for ``harness clean`` to remove) among the run's notes at its start, so a restart that is
  refused (a preflight failure, a loop running elsewhere) says nothing of it.
* A run that carries what the loop learned (``earlier="carry"``: a triggered run, unless its trigger
  says ``fresh``) resumes a loop still under way. A loop that ended (passed, or escalated) is set
  aside as a restart sets it aside, and the new run's progress.md starts with an ``Earlier runs``
  section (:mod:`harness.memory.lessons`) made of the old one; after a pass, the new run's branch
  starts from the passed run's branch, so its work is built on.
* A run that reopens the loop (``earlier="reopen"``: a review of its pull request) takes a loop that
  ended (passed, or escalated) up again on its own branch: round N+1 follows round N, with up to
  ``max_iterations`` rounds more (100 in all at most), so the pull request from that branch is the
  one updated.
* A loop that passes loses the escalation report an earlier run of it left: the report describes
  a state that no longer holds (the event log of that run still has its stop).
* A run that ended before any round did work (a wrong key, a provider that cannot be reached, a
  gate that cannot run at the base) leaves no branch or worktree, and its progress file says the
  loop was not started: there is nothing to resume or to look at, and the loop starts afresh
  next time.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from harness.core import nofollow
from harness.core.errors import ConfigError
from harness.engine.bounds import MAX_ITERATIONS
from harness.memory.lessons import earlier_runs
from harness.memory.progress import Progress
from harness.memory.progress_terms import Status
from harness.memory.run_state import RunState
from harness.memory.spend import spend_path
from harness.outer.options import ArtifactFile
from harness.outer.result import RunResult
from harness.outer.run import previous_name, save_progress
from harness.outer.settings import Settings
from harness.workspace.cleanup import remove_branch, remove_worktree, top_of
from harness.workspace.git_cmd import config_get, git, rev_parse


def set_aside(settings: Settings, path: Path) -> list[str]:
    """Set aside, for a restart, the loop's progress file at ``path``, its spend record and its
    work file; what the person should be told as the run starts."""
    recorded = _read(path)
    earlier = RunState.read(recorded).branch if recorded is not None else None
    nofollow.rename(path, previous_name(path).name)
    spent = spend_path(path)  # a restart starts a new budget
    nofollow.rename(spent, previous_name(spent).name)
    notes = []
    artifact = settings.critic_artifact
    if isinstance(artifact, ArtifactFile):
        work = settings.workspace / artifact.path
        if work.is_file():
            work.replace(previous_name(work))
            notes.append(f"set {work} aside as {previous_name(work).name}")
    if earlier:
        notes.append(
            f"the earlier run's branch {earlier} is left as it was; "
            "`harness clean` removes it (and its worktree, if it has one)"
        )
    return notes


def take_up(
    settings: Settings, progress: Progress, *, reload: bool
) -> tuple[Settings, Progress, list[str]]:
    """The settings and progress a run starts from as ``settings.earlier`` says (above), and
    what to tell the person as it starts; read under the loop's lock, as another process may have
    moved progress.md on (``reload``: ``progress`` came from that file)."""
    path = progress.path
    assert path is not None
    if settings.earlier == "restart":
        fresh = Progress(name=settings.name, goal=settings.goal, path=path)
        return settings, fresh, set_aside(settings, path)
    ended = _ended(path) if settings.earlier in ("carry", "reopen") else None
    if ended is not None and settings.earlier == "carry":
        return _carry_over(settings, path, ended)
    if ended is not None and RunState.read(ended).branch:
        ended.status = Status.IN_PROGRESS
        rounds = min(ended.iteration + settings.max_iterations, MAX_ITERATIONS)
        return settings.model_copy(update={"max_iterations": rounds}), ended, []
    if reload and os.path.lexists(path):
        progress = Progress.load(path)
    return settings, progress, []


def _carry_over(
    settings: Settings, path: Path, earlier: Progress
) -> tuple[Settings, Progress, list[str]]:
    """``earlier``, the progress file at ``path`` of a loop that ended, set aside as
    :func:`set_aside` does; the new run's settings (after a pass: starting from the passed run's
    branch, when there is no other start), its progress carrying the old one's lessons, and its
    notes."""
    branch = RunState.read(earlier).branch
    start = settings.start
    if start is None and earlier.status is Status.PASSED and branch:
        start = rev_parse(settings.workspace, f"refs/heads/{branch}^{{commit}}")  # None: gone
    notes = set_aside(settings, path)
    notes.append(f"what the earlier run learned is carried into {path.name}'s Earlier runs")
    if start is not None and start != settings.start:
        notes.append(f"the loop passed before: this run starts from its branch {branch}")
    progress = Progress(
        name=settings.name, goal=settings.goal, path=path, extra=[earlier_runs(earlier)]
    )
    return settings.model_copy(update={"start": start}), progress, notes


def _read(path: Path) -> Progress | None:
    """The progress file at ``path``; None when there is none or it cannot be read (the resume
    reads it again and says what is wrong)."""
    if not path.is_file():
        return None
    try:
        return Progress.load(path)
    except ConfigError:
        return None


def _ended(path: Path) -> Progress | None:
    """The progress file at ``path`` when it says its loop ended (passed, or escalated)."""
    progress = _read(path)
    ended = progress is not None and progress.status in (Status.PASSED, Status.ESCALATED)
    return progress if ended else None


def end_run(settings: Settings, progress: Progress | None, result: RunResult) -> RunResult:
    """What a finished run leaves that is of no use, removed: a passed loop's stale escalation
    report; the branch and worktree of a run that ended before any round did work (said in
    :attr:`RunResult.removed`)."""
    if progress is None or progress.path is None:
        return result
    if result.passed:
        report = settings.report_path(progress.path, None)
        if report is not None and report.is_file():
            report.unlink()
    removed = _drop_idle_run(settings, progress, result)
    if removed is None:
        return result
    return dataclasses.replace(result, branch=None, worktree=None, removed=removed)


def _drop_idle_run(settings: Settings, progress: Progress, result: RunResult) -> str | None:
    """Remove the worktree and branch of an idle run and mark the loop not started; what was
    removed, or None when the run is kept.

    Idle means: it did not pass, no round of the loop was ever recorded, its branch (in a
    worktree of its own) holds no commit beyond its base and its worktree no change.
    """
    worktree, branch = result.worktree, result.branch
    if result.passed or result.rounds or worktree is None or branch is None:
        return None
    repo = top_of(settings.workspace)
    if repo is None or worktree.resolve() == repo:
        return None
    if progress.iteration or progress.attempts or RunState.read(progress).branch != branch:
        return None
    base = config_get(repo, f"branch.{branch}.harnessBase")
    if base is None or git(repo, "rev-parse", branch).strip() != base:
        return None
    if git(worktree, "status", "--porcelain", "--untracked-files=all").strip():
        return None  # work a round could not commit (a failing git add) is kept
    remove_worktree(repo, worktree)
    remove_branch(repo, branch)
    progress.status = Status.NOT_STARTED
    RunState().write(progress)
    save_progress(settings, progress)
    return f"removed its branch {branch} and worktree {worktree}"
