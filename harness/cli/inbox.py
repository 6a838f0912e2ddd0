"""What a person tells a running loop: ``harness approve`` answers the approval it waits for,
``harness note`` queues guidance for its next round; both through the loop's inbox beside its
progress file."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from harness.cli.exit_codes import EXIT_PASSED
from harness.core.errors import ConfigError

if TYPE_CHECKING:
    from harness.memory.inbox import Inbox


def approve(args: argparse.Namespace) -> int:
    """Answer the approval a loop waits for (``--reject NOTE`` to send it back with a note)."""
    answer: Literal["approved", "rejected"] = "approved" if args.reject is None else "rejected"
    request = _inbox(args.loop).answer(answer, args.reject or "")
    if request.action:
        print(f"{request.loop}: {request.action} ({answer})")
        return EXIT_PASSED
    feedback = "" if args.reject is None else "; the note is its next round's feedback"
    print(f"{request.loop}: round {request.round} {answer}{feedback}")
    return EXIT_PASSED


def note(args: argparse.Namespace) -> int:
    """Queue guidance that the loop's next round shows in its task and records in progress.md."""
    from harness.memory.progress import Progress
    from harness.memory.progress_terms import Status

    inbox = _inbox(args.loop)
    inbox.add_note(args.text)
    if inbox.progress.is_file() and Progress.load(inbox.progress).status is Status.PASSED:
        print(
            f"{inbox.progress.stem}: note queued, but the loop has passed: no round reads it "
            "until `harness run --restart` starts the loop again"
        )
    else:
        print(f"{inbox.progress.stem}: note queued for the next round")
    return EXIT_PASSED


def _inbox(loop: str) -> Inbox:
    from harness.memory.inbox import Inbox
    from harness.spec import CONFIG_NAME, LoopSpec

    path = Path(loop)
    if path.is_file() or (path / CONFIG_NAME).is_file():
        return Inbox(LoopSpec.from_toml(path).progress_path())
    named = Path("progress") / f"{loop}.md"
    if "/" not in loop and (named.exists() or Inbox(named).request_file.exists()):
        return Inbox(named)
    raise ConfigError(
        f"{loop}: not a loop.toml, a folder holding one, or the name of a loop in ./progress/"
    )
