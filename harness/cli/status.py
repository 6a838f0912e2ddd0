"""``harness status``: where each loop under a folder stands, read without validating (a
progress file is read as written, so the command stays fast), one broken file never hiding the
others."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from harness.cli.exit_codes import EXIT_PASSED, EXIT_USAGE
from harness.core.errors import ConfigError

if TYPE_CHECKING:
    from harness.memory.progress_format import ProgressText
    from harness.outer.best import RoundMark


def status(args: argparse.Namespace) -> int:
    from harness.cli.discover import find_loops

    path = Path(args.path)
    loops, unreadable = find_loops(path)
    if not loops and not unreadable:
        print(f"no loops found under {path}")
    for problem in unreadable:
        print(f"{problem.path}: cannot be read: {problem.reason}")
    broken = len(unreadable)
    for loop in loops:
        file = loop.progress
        if not file.exists():
            source = loop.config.file if loop.config else file
            print(f"{loop.config.name if loop.config else file.stem}: not started ({source})")
            continue
        from harness.memory.progress_format import read_progress  # only once a loop has one
        from harness.memory.progress_terms import Status
        from harness.memory.sections import read_markdown
        from harness.outer.best import RoundMark, best_round

        try:  # read as written, not validated: pydantic's import alone costs what status may
            progress = read_progress(read_markdown(file, "progress file", own=True), source=file)
        except ConfigError as exc:  # one broken file must not hide the other loops
            print(f"{file.stem}: cannot be read: {exc}")
            broken += 1
            continue
        fields = progress.fields
        cap = f" of {fields['max_iterations']}" if fields.get("max_iterations") else ""
        open_items = sum(not done for _, done in progress.checklist)
        marks = [RoundMark.of_text(attempt) for attempt in progress.attempts]
        last = progress.attempts[-1].fields["outcome"] if progress.attempts else "no rounds yet"
        best = best_round(marks)
        behind = best is not None and not best.passed and best.round != marks[-1].round
        status = fields.get("status", Status.NOT_STARTED)
        state = _state(file, str(status))
        played = fields.get("iteration", 0)
        playing = state.startswith("running") and status == Status.IN_PROGRESS
        at = f"{played + 1 if isinstance(played, int) else played}{cap} in progress"
        print(
            f"{fields.get('name') or file.stem}: {state}, round "
            f"{at if playing else f'{played}{cap}'}, {open_items} open item(s), last: {last}"
            + (f", best: {best.describe()}" if best is not None and behind else "")
            + _restored(progress, marks)
        )
    return EXIT_USAGE if broken else EXIT_PASSED


def _restored(progress: ProgressText, marks: list[RoundMark]) -> str:
    """What the run branch holds when ``harness restore`` put a round on it since the last round
    played: that round, and whether it passed (else nothing)."""
    from harness.memory.progress_terms import RUN_HEADING, restored_round
    from harness.memory.sections import heading_key

    run = [s for s in progress.extra if s.key == heading_key(RUN_HEADING)]
    for line in run[0].lines if run else []:
        if (number := restored_round(line.text)) is not None:
            passed = any(mark.round == number and mark.passed for mark in marks)
            held = "passed" if passed else "did not pass"
            return f"; the run branch holds round {number} (`harness restore`), which {held}"
    return ""


def _state(progress: Path, recorded: str) -> str:
    """What a loop is doing now: waiting for a person's approval (a request is pending),
    running (a process holds its lock), else what its progress file records."""
    from harness.memory.inbox import Inbox
    from harness.memory.lock import LoopLock

    request = Inbox(progress).pending()
    if request is not None and request.action:
        return f"waiting for approval of an action: {request.action} (`harness approve`)"
    if request is not None:
        return f"waiting for approval of round {request.round} (`harness approve`)"
    holder = LoopLock(progress).holder()
    if holder is not None:
        return f"running (pid {holder.get('pid', '?')} on {holder.get('host', '?')})"
    return recorded
