"""The ``harness`` command: init, run, resume, status, approve, note, report, runs.

Exit codes: 0 passed, 1 internal error, 2 bad usage or configuration, 3 escalated.
Heavy modules are imported inside the commands, so ``harness --help`` stays instant.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from harness.cli.exit_codes import EXIT_ERROR, EXIT_ESCALATED, EXIT_USAGE
from harness.cli.scale_args import add_attempts_argument, add_batch_parser
from harness.core.errors import HarnessError
from harness.core.redact import Redactor

KINDS = ("bugfix", "content", "research")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harness",
        description="Keep an agent working until the job is verifiably done.",
        epilog="Exit codes: 0 passed, 1 internal error, 2 bad usage or configuration, 3 escalated.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    init = commands.add_parser("init", help="scaffold loop.toml, a skill and progress/ here")
    init.add_argument("kind", nargs="?", choices=KINDS, default="bugfix")
    init.add_argument("--dir", type=Path, default=Path("."), help="folder to scaffold in")

    for name, text in (
        ("run", "run a loop (resumes one in progress)"),
        ("resume", "resume a loop"),
    ):
        run = commands.add_parser(name, help=text)
        run.add_argument("path", nargs="?", default=".", help="a loop.toml or a folder holding one")
        run.add_argument("--model", help="author model (overrides HARNESS_MODEL and the file)")
        run.add_argument(
            "--critic-model", help="critic model (default: the file's, else the author's)"
        )
        run.add_argument("--max-iterations", type=_rounds, help="round cap (1-100)")
        run.add_argument("--restart", action="store_true", help="start over, even if finished")
        add_attempts_argument(run)
        run.add_argument(
            "--otel", action="store_true", help="export spans with OpenTelemetry (harness[otel])"
        )
        output = run.add_mutually_exclusive_group()
        output.add_argument("--quiet", action="store_true", help="print only the final line")
        output.add_argument("--json", action="store_true", help="print every event as JSON")

    status = commands.add_parser("status", help="where each loop stands")
    status.add_argument("path", nargs="?", default=".", help="loop.toml, its folder, or progress/")

    loop_help = "loop.toml, its folder, or a loop's name (progress/NAME.md here)"
    approve = commands.add_parser("approve", help="approve the round a loop waits on")
    approve.add_argument("loop", nargs="?", default=".", help=loop_help)
    approve.add_argument(
        "--reject", metavar="NOTE", help="reject it instead; NOTE is the next round's feedback"
    )
    note = commands.add_parser("note", help="queue guidance for a loop's next round")
    note.add_argument("loop", help=loop_help)
    note.add_argument("text", help="what the next round should take into account")

    report = commands.add_parser("report", help="summarise a run")
    report.add_argument("run", help="a run id, a run folder, or a batch folder")
    report.add_argument("--root", type=Path, default=Path("."), help="where .harness/runs lives")
    report.add_argument("--html", type=Path, metavar="FILE", help="also write an HTML report")

    runs = commands.add_parser("runs", help="list recent runs")
    runs.add_argument("root", nargs="?", type=Path, default=Path("."))
    add_batch_parser(commands)
    return parser


def _rounds(text: str) -> int:
    from harness.engine.loop import MAX_ITERATIONS

    value = int(text) if text.strip().lstrip("-").isdigit() else 0
    if not 1 <= value <= MAX_ITERATIONS:
        raise argparse.ArgumentTypeError(
            f"must be an integer from 1 to {MAX_ITERATIONS}, got {text!r}"
        )
    return value


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        from harness.cli import commands

        handler = getattr(commands, args.command)
        return int(handler(args))
    except HarnessError as exc:
        from harness.memory.lock import LockHeld

        print(f"harness: {Redactor().redact_text(str(exc))}", file=sys.stderr)
        return EXIT_USAGE if isinstance(exc, ValueError | LockHeld) else EXIT_ERROR
    except KeyboardInterrupt:
        print("harness: interrupted", file=sys.stderr)
        return EXIT_ESCALATED
    except Exception:  # noqa: BLE001 - the last line of defence reports, then exits 1
        print(Redactor().redact_text(traceback.format_exc()), end="", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
