"""What the command does around a run so that each start is clean and nothing stale is left.

* ``--restart`` sets aside the work file a file-judged loop produces (``[critic] file``), as it
  sets aside progress.md: a new run must make it anew, not pass on an earlier run's file.
* A loop that passes loses the escalation report an earlier run of it left: the report
  describes a state that no longer holds (the event log of that run still has its stop).
* ``--restart`` names the earlier run's branch it leaves behind: no longer resumable, it is
  for ``harness clean`` to remove. It says so once the run has begun (:class:`NotesAtStart`),
  never for a restart that is then refused (a preflight failure, a loop running elsewhere).
* A git repository with no commit yet is refused under ``isolation = "auto"``: there is no
  commit to branch from, and working in place would leave nothing to go back to.
* A run that ended before any round did work (a wrong key, a provider that cannot be reached)
  leaves no branch or worktree: there is nothing in them to resume or to look at, and the loop
  starts afresh next time.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from harness.core.atomic import atomic_write_text
from harness.core.errors import ConfigError
from harness.core.event_schema import EventBase, RunStart
from harness.core.sink import EventSink
from harness.memory.lock import LoopLock
from harness.memory.progress import Progress
from harness.memory.progress_terms import Status
from harness.memory.run_state import RunState
from harness.outer.result import RunResult
from harness.spec import LoopSpec
from harness.workspace.cleanup import remove_branch, remove_worktree, top_of
from harness.workspace.git import chosen_isolation
from harness.workspace.git_cmd import config_get, git


def previous_name(path: Path) -> Path:
    """``draft.md`` → ``draft.previous.md``: where a restart sets a file aside."""
    return path.with_name(f"{path.stem}.previous{path.suffix}")


def set_aside_work(config: LoopSpec) -> list[Path]:
    """Rename the loop's work file before a restart; the files set aside.

    Done under the loop's lock, so the file of a loop another process is running stays put
    (that raises :class:`~harness.memory.lock.LockHeld`).
    """
    if config.critic.artifact != "file" or not config.critic.file:
        return []
    work = config.root / config.workspace / config.critic.file
    moved = []
    with LoopLock(config.progress_path()):
        if work.is_file():
            work.replace(previous_name(work))
            moved.append(work)
    return moved


def drop_stale_escalation(config: LoopSpec) -> Path | None:
    """Remove the escalation report beside a loop's progress file; the path if there was one."""
    report = config.progress_path().with_suffix(".escalation.md")
    if not report.is_file():
        return None
    report.unlink()
    return report


def abandoned_branch(config: LoopSpec) -> str | None:
    """The run branch the loop's progress file names, which a restart leaves behind."""
    path = config.progress_path()
    if not path.is_file():
        return None
    try:
        return RunState.read(Progress.load(path)).branch
    except ConfigError:
        return None


def refuse_unborn_repository(config: LoopSpec) -> None:
    """Raise :class:`ConfigError` when ``isolation = "auto"`` would edit, in place, a git
    repository that has no commit yet (``auto`` means a worktree only once there is a commit).
    ``isolation = "none"`` says working in place is meant, and is left alone."""
    workspace = config.root / config.workspace
    if config.isolation != "auto" or not workspace.is_dir():
        return
    top = top_of(workspace)
    if top is not None and chosen_isolation(workspace, "auto") == "none":
        raise ConfigError(
            f"{top} is a git repository with no commits yet, so a run has no commit to branch "
            "from and would edit your files in place: make a first commit (`git add -A && git "
            'commit -m "first commit"`), or set isolation = "none" in loop.toml to work in place'
        )


def drop_idle_run(
    config: LoopSpec, result: RunResult, *, redact: Callable[[str], str] = str
) -> str | None:
    """Remove the worktree and branch of a run that ended before any round did work, and mark
    the loop not started, so the next ``harness run`` starts afresh; what was removed, or None
    when the run is kept.

    Idle means: it did not pass, no round of the loop was ever recorded, its branch (in a
    worktree of its own) holds no commit beyond its base and its worktree no change. Under the
    loop's lock, like a run.
    """
    worktree, branch = result.worktree, result.branch
    if result.passed or result.rounds or worktree is None or branch is None:
        return None
    repo = top_of(config.root / config.workspace)
    path = config.progress_path()
    if repo is None or worktree.resolve() == repo or not path.is_file():
        return None
    with LoopLock(path):
        progress = Progress.load(path)
        base = config_get(repo, f"branch.{branch}.harnessBase")
        if progress.iteration or progress.attempts or RunState.read(progress).branch != branch:
            return None
        if base is None or git(repo, "rev-parse", branch).strip() != base:
            return None
        if git(worktree, "status", "--porcelain", "--untracked-files=all").strip():
            return None  # work a round could not commit (a failing git add) is kept
        remove_worktree(repo, worktree)
        remove_branch(repo, branch)
        progress.status = Status.NOT_STARTED
        RunState().write(progress)
        atomic_write_text(path, redact(progress.render()))
    return f"removed its branch {branch} and worktree {worktree}"


class NotesAtStart:
    """Passes every event on to ``sink``, and prints ``notes`` to ``stream`` as the run starts."""

    def __init__(self, sink: EventSink, notes: list[str], stream: TextIO) -> None:
        self.sink, self.notes, self.stream = sink, notes, stream

    def emit(self, event: EventBase) -> None:
        if isinstance(event, RunStart):
            for line in self.notes:
                print(f"note: {line}", file=self.stream)
            self.notes = []
        self.sink.emit(event)
