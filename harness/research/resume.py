"""What a resumed research run carries from the run it resumes: its sources and its claim ledger.

A resumed run has a run id (and a folder, ``.harness/runs/<run id>/``) of its own. A loop that
archives sources (``[web]``, a citations gate) or keeps a claim ledger (a convergence gate) starts
its archive with every fetch the earlier run recorded (as recorded there, the time of the fetch
included) and its ledger with the earlier run's entries, so a quote of a page fetched before the
resume still checks out without fetching it again, and claims that settled before it still count.

The earlier run is the latest run of this loop before this one: the latest whose ``run_start``
event names the branch progress.md records (the branch the first run of the chain named after its
id; each resume carried its predecessors), or, for a loop without a branch, the latest with its
name working in its folder. Only the entries of rounds progress.md counts as completed are
carried: an entry recorded after the start of the round a kill cut short is left out, as the round
is played again. Everything is read from the project's root without following a link: a link
anywhere on the way stops the run (:class:`~harness.core.nofollow.UnsafePath`), and bytes that do
not match their hash are refused (a :class:`~harness.core.errors.ConfigError`).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from harness.core import nofollow
from harness.core.event_schema import RoundStart, RunStart, parse_event
from harness.memory.run_state import RunState
from harness.observe.events import EVENTS_FILE, read_events
from harness.research.archive import ARCHIVE_DIR, SourceArchive
from harness.research.claim_ledger import LEDGER_FILE, carry_ledger

_HEAD = 64 * 1024
"""How much of an event log is read to find the run's ``run_start`` (its first events)."""


def carry_on_resume(
    root: Path, run: Path, archive: SourceArchive, *, loop_name: str, workspace: Path
) -> Callable[[RunState, int], None]:
    """The hook that starts ``run``'s archive and ledger with the earlier run's, on a resume.

    ``root`` is the project's root (where ``.harness/runs`` is), ``run`` the new run's folder;
    ``loop_name`` and ``workspace`` tell this loop's runs apart when it works without a branch.
    """

    def carry(state: RunState, completed: int) -> None:
        earlier = earlier_run(root, run, state.branch, loop_name=loop_name, workspace=workspace)
        if earlier is None:
            return
        archive.keep_all(SourceArchive(earlier / ARCHIVE_DIR, root=root))
        cut = _cut_short(root, earlier, completed)
        carry_ledger(earlier / LEDGER_FILE, run / LEDGER_FILE, before=cut, root=root)

    return carry


def earlier_run(
    root: Path, run: Path, branch: str | None, *, loop_name: str, workspace: Path
) -> Path | None:
    """The folder of the latest run before ``run`` of the loop that works on ``branch`` (or,
    with none, of the loop named ``loop_name`` working in ``workspace``); None when there is
    none."""
    runs = run.parent
    try:
        names = sorted(os.listdir(runs))
    except FileNotFoundError:
        return None
    found: tuple[datetime, Path] | None = None
    for name in names:
        folder = runs / name
        if folder == run or not _is_folder(folder):
            continue
        start = _run_start(root, folder / EVENTS_FILE)
        if start is None or not _same_loop(start, branch, loop_name, workspace):
            continue
        if found is None or start.ts > found[0]:
            found = (start.ts, folder)
    return found[1] if found else None


def _same_loop(start: RunStart, branch: str | None, loop_name: str, workspace: Path) -> bool:
    if branch is not None:
        return start.branch == branch
    return (
        start.branch is None
        and start.loop_name == loop_name
        and Path(start.workspace).resolve() == workspace.resolve()
    )


def _is_folder(path: Path) -> bool:
    """A folder, not a link to one (a link is passed over: it is no run the harness made)."""
    try:
        return stat.S_ISDIR(path.lstat().st_mode)
    except OSError:
        return False


def _run_start(root: Path, events: Path) -> RunStart | None:
    """The ``run_start`` event among the first of the log ``events``; None without one."""
    try:
        fd = nofollow.open_file(events, os.O_RDONLY, root=root)
    except FileNotFoundError:
        return None
    try:
        head = nofollow.read_up_to(fd, _HEAD)
    finally:
        os.close(fd)
    for line in head.decode("utf-8", errors="replace").split("\n")[:-1]:  # whole lines only
        try:
            event = parse_event(line)
        except ValueError:
            return None
        if isinstance(event, RunStart):
            return event
    return None


def _cut_short(root: Path, earlier: Path, completed: int) -> datetime | None:
    """When the earlier run began the round after the last completed one (a round a kill cut
    short, to be played again); None when it never began it."""
    events = earlier / EVENTS_FILE
    for event in read_events(events, root=root):
        if isinstance(event, RoundStart) and event.round == completed + 1:
            return event.ts
    return None
