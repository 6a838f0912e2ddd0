"""The ``harness`` command: init, run, resume, check, watch, status, approve, note, restore,
report, calibrate, runs, clean, batch, bench.

Exit codes: 0 passed, 1 internal error, 2 bad usage or configuration, 3 escalated.
Heavy modules are imported inside the commands, so ``harness --help`` stays instant.
Results go to stdout, progress and diagnostics to stderr; every error is one line
(``--debug`` adds the traceback) and a closed pipe ends the command quietly.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO, cast

from harness.cli.exit_codes import EXIT_ERROR, EXIT_ESCALATED, EXIT_PASSED, EXIT_USAGE
from harness.cli.scale_args import (
    add_batch_parser,
    add_bench_parser,
    add_runner_argument,
    attempts_count,
    positive_int,
)
from harness.core.errors import HarnessError
from harness.core.redact import Redactor
from harness.core.text import InertStream

KINDS = ("bugfix", "content", "research")
CHECKS = ("content", "citations")
DEBUG_HELP = "show the traceback of an error, not just its line"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harness",
        description="Keep an agent working until the job is verifiably done.",
        epilog="Exit codes: 0 passed, 1 internal error, 2 bad usage or configuration, 3 escalated.",
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="print the version and exit")
    parser.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    init = commands.add_parser("init", help="scaffold loop.toml, a skill and progress/ here")
    init.add_argument(
        "kind", nargs="?", choices=KINDS, default="bugfix", help="the loop to start from"
    )
    init.add_argument("--dir", type=Path, default=Path("."), help="folder to scaffold in")

    for name, text in (
        ("run", "run a loop (resumes one in progress)"),
        ("resume", "resume a loop"),
    ):
        run = commands.add_parser(name, help=text)
        run.add_argument("path", nargs="?", default=".", help="a loop.toml or a folder holding one")
        run.add_argument("--model", help="author model (overrides HARNESS_MODEL and the file)")
        run.add_argument(
            "--critic-model",
            help="critic model (overrides HARNESS_CRITIC_MODEL and the file; default: the author's)",
        )
        run.add_argument("--max-iterations", type=_rounds, help="round cap (1-100)")
        run.add_argument("--restart", action="store_true", help="start over, even if finished")
        add_runner_argument(
            run,
            "what runs each round's session (overrides [agent] runner); several: one attempt "
            "each, in turn, compared side by side",
        )
        run.add_argument("--issue", type=positive_int, metavar="N",
                         help="the issue the run is for: its connectors comment there")  # fmt: skip
        run.add_argument(
            "--attempts",
            type=attempts_count,
            help="best-of-N: N parallel attempts on their own branches, the best passing one wins",
        )
        run.add_argument(
            "--otel", action="store_true", help="export spans with OpenTelemetry (harness[otel])"
        )
        output = run.add_mutually_exclusive_group()
        output.add_argument(
            "--quiet", action="store_true", help="no progress; print only the verdict line"
        )
        output.add_argument("--json", action="store_true", help="print every event as JSON")

    check = commands.add_parser(
        "check",
        help="run a built-in check (content, citations) as a gate does",
        description="Run a built-in check on a file: exit 0 if it passes, 1 if not, 2 if it "
        "cannot be read. `harness check content --help` lists the content checks. In a gate it "
        "works whatever Python environment the project's commands run in.",
    )
    check.add_argument("kind", choices=CHECKS, help="which check")
    check.add_argument("arguments", nargs=argparse.REMAINDER, help="the check's own arguments")

    watch = commands.add_parser(
        "watch", help="run a loop whenever its [[triggers]] fire (schedule, issues, webhook)"
    )
    watch.add_argument("path", nargs="?", type=Path, default=Path("."),
                       help="a loop.toml or a folder holding one")  # fmt: skip
    watch.add_argument("--model", help="author model (overrides HARNESS_MODEL and the file)")
    watch.add_argument(
        "--critic-model", help="critic model (default: the file's, else the author's)"
    )
    polls = watch.add_mutually_exclusive_group()
    polls.add_argument("--once", action="store_true",
                       help="poll the triggers once, wait for the runs started, and exit")  # fmt: skip
    polls.add_argument("--polls", type=positive_int, metavar="N",
                       help="poll N times, then wait for the runs started, and exit")  # fmt: skip
    watch.add_argument("--interval", type=float, default=30.0, metavar="SECONDS",
                       help="seconds between polls (default 30)")  # fmt: skip
    watch.add_argument("--max-runs", type=positive_int, default=2, metavar="N",
                       help="runs going on at once; later starts queue (default 2)")  # fmt: skip

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

    restore = commands.add_parser(
        "restore", help="bring a loop's best round (or round N) back into its work"
    )
    restore.add_argument("loop", nargs="?", default=".", help="a loop.toml or its folder")
    restore.add_argument(
        "--round", type=_rounds, metavar="N", help="this round instead of the best one"
    )

    report = commands.add_parser("report", help="summarise a run")
    report.add_argument("run", help="a run id, a run folder, or a batch folder")
    report.add_argument(
        "--root", type=Path, default=Path("."), help="look in its .harness/runs and its loops'"
    )
    report.add_argument("--html", type=Path, metavar="FILE", help="also write an HTML report")

    calibrate = commands.add_parser(
        "calibrate", help="measure how well the critic setup agrees with a person's labels"
    )
    calibrate.add_argument("path", nargs="?", default=".", help="a loop.toml or its folder")
    calibrate.add_argument(
        "--examples",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="a folder of artifacts with labels.jsonl (accept/reject; repeatable)",
    )
    calibrate.add_argument(
        "--approvals",
        type=Path,
        action="append",
        default=[],
        metavar="RUNS",
        help="a run folder, or a folder of them, whose recorded approvals are labels (repeatable)",
    )
    calibrate.add_argument("--model", help="author model (the critic's default)")
    calibrate.add_argument("--critic-model", help="critic model (as for `harness run`)")
    calibrate.add_argument("--json", action="store_true", help="print the report as JSON")
    calibrate.add_argument("--quiet", action="store_true", help="no progress on stderr")

    show = commands.add_parser("show", help="show a run's trajectory step by step")
    show.add_argument("run", help="a run id or a run folder")
    show.add_argument("--round", type=_rounds, metavar="N", help="only round N")
    show.add_argument(
        "--root", type=Path, default=Path("."), help="look in its .harness/runs and its loops'"
    )

    replay = commands.add_parser(
        "replay", help="re-run a recorded run with its recorded replies and report divergences"
    )
    replay.add_argument("run", help="a run id or a run folder")
    replay.add_argument("--round", type=_rounds, metavar="N", help="replay rounds 1 to N only")
    replay.add_argument(
        "--loop",
        type=Path,
        help="today's loop.toml, or its folder (default: the one in --root); never the recording's",
    )
    replay.add_argument(
        "--repo", type=Path, help="the repository to replay in (default: the one holding --loop)"
    )
    replay.add_argument(
        "--root", type=Path, default=Path("."), help="look in its .harness/runs and its loops'"
    )
    replay.add_argument(
        "--live",
        action="store_true",
        help="from the first divergence (or the end of a cut-off recording) on, call the "
        "models loop.toml names and go on as a run (real model calls: they cost)",
    )

    runs = commands.add_parser("runs", help="list recent runs")
    runs.add_argument(
        "root",
        nargs="?",
        type=Path,
        default=Path("."),
        help="the folder whose runs and loops' runs are listed (default .)",
    )

    clean = commands.add_parser(
        "clean", help="remove worktrees and branches of finished or abandoned runs"
    )
    clean.add_argument("path", nargs="?", default=".", help="a loop.toml or a folder of loops")
    clean.add_argument("--dry-run", action="store_true", help="say what would go; change nothing")
    clean.add_argument(
        "--branch",
        action="append",
        default=[],
        metavar="NAME",
        help="clean only this run branch, even if it holds a passed round (repeatable)",
    )
    clean.add_argument(
        "--include-passed",
        action="store_true",
        help="also remove run branches that hold a passed round not merged anywhere",
    )
    add_batch_parser(commands)
    add_bench_parser(commands)
    for command in commands.choices.values():  # `harness run --debug` as `harness --debug run`
        command.add_argument(
            "--debug", action="store_true", default=argparse.SUPPRESS, help=DEBUG_HELP
        )
    return parser


class _Version(argparse.Action):
    """``--version``: the installed version, looked up only when asked for."""

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("harness")
        except PackageNotFoundError:
            number = "unknown (not installed)"
        print(f"harness {number}")
        parser.exit()


def _rounds(text: str) -> int:
    from harness.engine.bounds import check_max_iterations

    try:
        return check_max_iterations(int(text) if text.strip().lstrip("-").isdigit() else text)
    except HarnessError as exc:  # "max_iterations: must be ...": the flag names itself
        raise argparse.ArgumentTypeError(str(exc).partition(": ")[2]) from None


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out, err = sys.stdout, sys.stderr
    # every command's text reaches the terminal inert, the data it quotes included
    sys.stdout, sys.stderr = cast(TextIO, InertStream(out)), cast(TextIO, InertStream(err))
    try:
        return _command(args)
    finally:
        sys.stdout, sys.stderr = out, err


def _command(args: argparse.Namespace) -> int:
    try:
        from harness.cli import commands

        handler = getattr(commands, args.command)
        return int(handler(args))
    except BrokenPipeError:  # the reader went away (`| head`): stop, and keep Python's exit quiet
        from harness.cli.pipe import silence_stdout

        silence_stdout()
        return EXIT_PASSED
    except HarnessError as exc:
        from harness.memory.lock import LockHeld

        _error(str(exc), args.debug)
        return EXIT_USAGE if isinstance(exc, ValueError | LockHeld) else EXIT_ERROR
    except KeyboardInterrupt:
        _error("interrupted", args.debug)
        return EXIT_ESCALATED
    except OSError as exc:  # a full disk, a read-only folder: the system's word, then exit 1
        where = f"{exc.filename}: " if exc.filename else ""
        _error(f"{where}{exc.strerror or exc}", args.debug)
        return EXIT_ERROR
    except Exception as exc:  # noqa: BLE001 - the last line of defence reports, then exits 1
        _error(f"internal error: {type(exc).__name__}: {exc} (--debug shows where)", args.debug)
        return EXIT_ERROR


def _error(message: str, debug: bool) -> None:
    """One line on stderr, secrets redacted; with ``--debug`` the traceback first."""
    redact = Redactor().redact_text

    with contextlib.suppress(BrokenPipeError):
        if debug:
            import traceback

            print(redact(traceback.format_exc()), end="", file=sys.stderr)
        print(f"harness: {redact(message)}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
