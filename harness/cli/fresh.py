"""What the command does around a run so that each start is clean and nothing stale is left.

* ``--restart`` sets aside the work file a file-judged loop produces (``[critic] file``), as it
  sets aside progress.md: a new run must make it anew, not pass on an earlier run's file.
* A loop that passes loses the escalation report an earlier run of it left: the report
  describes a state that no longer holds (the event log of that run still has its stop).
* ``--restart`` names the earlier run's branch it leaves behind: no longer resumable, it is
  for ``harness clean`` to remove. It says so once the run has begun (:class:`NotesAtStart`),
  never for a restart that is then refused (a preflight failure, a loop running elsewhere).
"""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from harness.core.errors import ConfigError
from harness.core.event_schema import EventBase, RunStart
from harness.core.sink import EventSink
from harness.memory.lock import LoopLock
from harness.memory.progress import Progress
from harness.memory.run_state import RunState
from harness.spec import LoopSpec


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
