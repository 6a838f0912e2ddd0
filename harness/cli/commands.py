"""What each ``harness`` subcommand does. Parsing and exit-code mapping live in :mod:`harness.cli.main`."""

from __future__ import annotations

import argparse
import shutil
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from harness.cli.exit_codes import EXIT_ERROR, EXIT_ESCALATED, EXIT_PASSED, EXIT_USAGE
from harness.core.errors import ConfigError
from harness.core.stop import StopReason
from harness.observe.run_summary import RUNS_DIR

if TYPE_CHECKING:
    from harness.memory.inbox import Inbox

SKILLS_DIR = Path(__file__).resolve().parent / "skills"


def init(args: argparse.Namespace) -> int:
    from harness.cli.templates import LOOP_TOML

    target: Path = args.dir
    target.mkdir(parents=True, exist_ok=True)
    config = target / "loop.toml"
    if config.exists():
        raise ConfigError(f"{config}: already exists; not overwriting it")
    skill_source = SKILLS_DIR / args.kind / "SKILL.md"
    if not skill_source.is_file():
        raise ConfigError(f"{skill_source}: the shipped skill is missing from this installation")
    skill_target = target / "skills" / args.kind / "SKILL.md"
    skill_target.parent.mkdir(parents=True, exist_ok=True)
    if not skill_target.exists():
        shutil.copyfile(skill_source, skill_target)
    (target / "progress").mkdir(exist_ok=True)
    config.write_text(LOOP_TOML[args.kind], encoding="utf-8")
    ignore = target / ".gitignore"
    lines = ignore.read_text(encoding="utf-8").splitlines() if ignore.exists() else []
    if ".harness/" not in lines:
        ignore.write_text("\n".join([*lines, ".harness/"]) + "\n", encoding="utf-8")
    print(f"wrote {config}, {skill_target} and {target / 'progress'}/")
    print("next: set a model (--model or HARNESS_MODEL) and run `harness run`")
    return EXIT_PASSED


def run(args: argparse.Namespace) -> int:
    from harness.cli.config import find_config, load_config
    from harness.cli.runner import Overrides, build_loop, mcp_servers
    from harness.core.sink import EventSink, Tee
    from harness.observe.events import EVENTS_FILE, EventLog
    from harness.observe.live import LiveProgress, Mode
    from harness.tools.mcp import mcp_tools

    config, root = load_config(args.path)
    if config.fleet is not None:
        from harness.cli.fleet import run_fleet

        return run_fleet(args, config, root)
    if (args.attempts or config.attempts) > 1:
        from harness.cli.attempts import run_attempts

        return run_attempts(args, config, root)
    run_id = uuid.uuid4().hex[:8]
    mode: Mode = "json" if args.json else "quiet" if args.quiet else "live"
    redactor = config.redactor(root)
    echo: EventSink = LiveProgress(sys.stdout if args.json else sys.stderr, mode)
    flush = None
    if args.otel:
        from harness.observe.otel import command_line_sink

        otel, flush = command_line_sink()
        echo = Tee(echo, otel)
    events = EventLog(
        root / RUNS_DIR / run_id / EVENTS_FILE, run_id=run_id, redactor=redactor, echo=echo
    )
    overrides = Overrides(args.model, args.critic_model, args.max_iterations, args.restart)
    try:
        with mcp_tools(mcp_servers(config, root)) as tools:
            loop = build_loop(
                config, root, overrides=overrides, events=events, run_id=run_id,
                redact=redactor.redact_text, tools=tools,
            )  # fmt: skip
            result = loop.run()
    except ConfigError as exc:
        raise ConfigError(f"{find_config(args.path)}: {exc}") from exc
    finally:
        if flush is not None:
            flush()
    if not args.json:
        if result.warning:
            print(redactor.redact_text(f"note: {result.warning}"), file=sys.stderr)
        said = f"{result.stop_reason.value}: {result.message}"
        print(redactor.redact_text(said), file=sys.stderr)
        if result.escalation:
            print(f"escalation report: {result.escalation}", file=sys.stderr)
        if result.branch:
            print(f"work is on branch {result.branch}", file=sys.stderr)
    if result.stop_reason.is_success:
        return EXIT_PASSED
    return EXIT_ERROR if result.stop_reason is StopReason.ERROR else EXIT_ESCALATED


resume = run


def status(args: argparse.Namespace) -> int:
    from harness.cli.config import CONFIG_NAME, load_config
    from harness.memory.progress import Progress

    path = Path(args.path)
    if path.is_file() or (path / CONFIG_NAME).is_file():
        config, root = load_config(path)
        files = [config.progress_path(root)]
    else:
        folder = path / "progress" if (path / "progress").is_dir() else path
        files = sorted(folder.glob("*.md"))
        files = [
            f
            for f in files
            if f.name.lower() != "readme.md"
            and not f.name.endswith((".escalation.md", ".previous.md"))
        ]
    if not files:
        print(f"no loops found under {path}")
    broken = 0
    for file in files:
        if not file.exists():
            print(f"{file}: not started")
            continue
        try:
            progress = Progress.load(file)
        except ConfigError as exc:  # one broken file must not hide the other loops
            print(f"{file.stem}: cannot be read: {exc}")
            broken += 1
            continue
        cap = f" of {progress.max_iterations}" if progress.max_iterations else ""
        open_items = len(progress.open_items)
        last = progress.attempts[-1].outcome if progress.attempts else "no rounds yet"
        print(
            f"{progress.name or file.stem}: {progress.status.value}, round {progress.iteration}{cap}, "
            f"{open_items} open item(s), last: {last}"
        )
    return EXIT_USAGE if broken else EXIT_PASSED


def approve(args: argparse.Namespace) -> int:
    """Answer the approval a loop waits for (``--reject NOTE`` to send it back with a note)."""
    inbox = _inbox(args.loop)
    rejected = args.reject is not None
    request = inbox.answer("rejected" if rejected else "approved", args.reject or "")
    verb = "rejected; the note is its next round's feedback" if rejected else "approved"
    print(f"{request.loop}: round {request.round} {verb}")
    return EXIT_PASSED


def note(args: argparse.Namespace) -> int:
    """Queue guidance that the loop's next round shows in its task and records in progress.md."""
    inbox = _inbox(args.loop)
    inbox.add_note(args.text)
    print(f"{inbox.progress.stem}: note queued for the next round")
    return EXIT_PASSED


def _inbox(loop: str) -> Inbox:
    from harness.cli.config import CONFIG_NAME, load_config
    from harness.memory.inbox import Inbox

    path = Path(loop)
    if path.is_file() or (path / CONFIG_NAME).is_file():
        config, root = load_config(path)
        return Inbox(config.progress_path(root))
    named = Path("progress") / f"{loop}.md"
    if "/" not in loop and (named.exists() or Inbox(named).request_file.exists()):
        return Inbox(named)
    raise ConfigError(
        f"{loop}: not a loop.toml, a folder holding one, or the name of a loop in ./progress/"
    )


def report(args: argparse.Namespace) -> int:
    from harness.cli.batch import is_batch, report_batch
    from harness.observe.report import find_run, load_run, render_html, render_text

    if is_batch(args.run):
        return report_batch(args)

    summary = load_run(find_run(args.run, root=args.root))
    print(render_text(summary))
    if args.html:
        try:
            args.html.write_text(render_html(summary), encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"--html {args.html}: cannot write: {exc.strerror}") from exc
        print(f"wrote {args.html}")
    return EXIT_PASSED


def batch(args: argparse.Namespace) -> int:
    from harness.cli.batch import run_batch

    return run_batch(args)


def runs(args: argparse.Namespace) -> int:
    from harness.observe.report import list_runs, render_runs

    found = list_runs(args.root / RUNS_DIR)
    print(render_runs(found) if found else f"no runs under {args.root / RUNS_DIR}")
    return EXIT_PASSED
