"""What each ``harness`` subcommand does (``status`` in :mod:`harness.cli.status`, ``approve`` and
``note`` in :mod:`harness.cli.inbox`). Parsing and exit-code mapping live in
:mod:`harness.cli.main`."""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from harness.cli.exit_codes import (
    EXIT_ESCALATED,
    EXIT_PASSED,
    run_exit_code,
)
from harness.cli.inbox import approve as approve
from harness.cli.inbox import note as note
from harness.cli.status import status as status
from harness.core.errors import ConfigError
from harness.workspace.caches import CACHE_PATTERNS

if TYPE_CHECKING:
    from harness.outer.result import RunResult
    from harness.spec import LoopSpec

CHECK_MODULES = {"content": "harness.checks.content", "citations": "harness.research.citations"}
"""The module of each ``harness check`` kind; each has a ``main(arguments)``."""
SKILLS_DIR = Path(__file__).resolve().parent / "skills"
IGNORED = (".harness/", "progress/*.lock", *CACHE_PATTERNS)
"""What ``harness init`` adds to .gitignore (the lines it lacks; the rest is kept): run data, the
lock file beside each progress file, and byte code and tool caches."""


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
    kept = skill_target.exists()
    if not kept:
        shutil.copyfile(skill_source, skill_target)
    (target / "progress").mkdir(exist_ok=True)
    config.write_text(LOOP_TOML[args.kind], encoding="utf-8")
    ignore = target / ".gitignore"
    lines = ignore.read_text(encoding="utf-8").splitlines() if ignore.exists() else []
    missing = [entry for entry in IGNORED if entry not in lines]
    if missing:
        ignore.write_text("\n".join([*lines, *missing]) + "\n", encoding="utf-8")
    if kept:
        print(f"wrote {config} and {target / 'progress'}/; kept your {skill_target}")
    else:
        print(f"wrote {config}, {skill_target} and {target / 'progress'}/")
    if _in_git(target):
        print(
            "next: commit these files (a run's worktree starts from your last commit), set a "
            "model (--model or HARNESS_MODEL) and run `harness run`"
        )
    else:
        print("next: set a model (--model or HARNESS_MODEL) and run `harness run`")
    return EXIT_PASSED


def _in_git(folder: Path) -> bool:
    return any(
        (parent / ".git").exists() for parent in (folder.resolve(), *folder.resolve().parents)
    )


def run(args: argparse.Namespace) -> int:
    from harness.assemble.launch import recorded_loop
    from harness.assemble.named_models import Overrides
    from harness.cli.runner_flag import runner_names
    from harness.cli.unborn import refuse_unborn_repository
    from harness.core.sink import EventSink, Tee
    from harness.observe.live import LiveProgress, Mode

    config = _spec(Path(args.path))
    runners = runner_names(args.runner) if args.runner else []
    for name in runners[1:]:  # each attempt's runner is checked before anything runs
        config.with_runner(name)
    if runners:
        config = config.with_runner(runners[0])
    if config.fleet is not None:
        if len(runners) > 1:
            raise ConfigError("--runner: several runners are for attempts, not a fleet")
        from harness.cli.fleet import run_fleet

        return run_fleet(args, config)
    refuse_unborn_repository(config)
    if (args.attempts or config.attempts) > 1 or len(runners) > 1:
        from harness.cli.attempts import run_attempts

        return run_attempts(args, config, runners if len(runners) > 1 else [])
    mode: Mode = "json" if args.json else "quiet" if args.quiet else "live"
    live = LiveProgress(sys.stdout if args.json else sys.stderr, mode)
    echo: EventSink = live
    flush = None
    if args.otel:
        from harness.observe.otel import command_line_sink

        otel, flush = command_line_sink()
        echo = Tee(echo, otel)
    overrides = Overrides.from_flags(args, issue=args.issue)
    try:
        loop = recorded_loop(config, overrides=overrides, echo=echo)
        try:
            result = loop.run()
        except ConfigError as exc:
            raise ConfigError(f"{config.source}: {exc}") from exc
    finally:
        if flush is not None:
            flush()
    if result.removed:
        print(
            f"note: no round did any work, so nothing is kept: {result.removed}; the next "
            "`harness run` starts afresh",
            file=sys.stderr,
        )
    _tell(result, args, closed=live.closed, redact=loop.settings.redact)  # the run's redactor
    return run_exit_code(result)


resume = run


def _tell(
    result: RunResult, args: argparse.Namespace, *, closed: bool, redact: Callable[[str], str]
) -> None:
    """The verdict on stdout; a reader gone (``| head``) changes neither the run nor its exit
    code, which still says how the run ended."""
    from harness.cli.pipe import silence_stdout

    if closed:  # `--json | head`: the output stopped, the run did not
        silence_stdout()
        print(
            f"harness: the reader of the output went away; the run went on to its end "
            f"({result.stop_reason.value}); `harness report {result.run_id}` shows it",
            file=sys.stderr,
        )
    elif not args.json:
        try:
            print_verdict(result, quiet=args.quiet, redact=redact)
        except BrokenPipeError:
            silence_stdout()


def _spec(path: Path) -> LoopSpec:
    """The loop.toml at ``path``; a folder without one is told how to make one."""
    from harness.cli.templates import LOOP_TOML
    from harness.spec import CONFIG_NAME, LoopSpec

    if path.is_dir() and not (path / CONFIG_NAME).exists():
        where = "" if path == Path(".") else f" --dir {path}"
        *kinds, last = LOOP_TOML
        raise ConfigError(
            f"{path / CONFIG_NAME}: no such file; `harness init KIND{where}` writes one, KIND "
            f"being {', '.join(kinds)} or {last}"
        )
    return LoopSpec.from_toml(path)


def print_verdict(
    result: RunResult,
    *,
    quiet: bool,
    redact: Callable[[str], str] = str,
    out: TextIO | None = None,
) -> None:
    """The run's outcome on ``out`` (stdout): the verdict line, then (unless quiet) what the
    connectors did and where things are."""
    out = out or sys.stdout
    line = f"{result.stop_reason.value}: {result.message.splitlines()[0]}"
    print(redact(line), flush=True, file=out)
    if result.unsandboxed:  # also when quiet: what the verdict is worth depends on it
        print(f"note: {result.unsandboxed}", flush=True, file=out)
    if quiet:
        return
    for connector in result.connectors:
        print(redact(connector), file=out)
    if result.escalation:
        print(f"escalation report: {result.escalation}", file=out)
    if result.best and not result.passed and result.best_round != result.iterations:
        print(f"best round: {result.best}; `harness restore` brings it back", file=out)
    if result.branch and result.worktree is not None and result.worktree.exists():
        print(
            f"work is on branch {result.branch} in {result.worktree}; `harness run` resumes it, "
            "`harness clean` removes it once you are done with it",
            file=out,
        )
    elif result.branch and result.passed and not result.merged:
        branch, base = result.branch, result.origin or "HEAD"
        print(
            f"the work is on branch {branch}: `git diff {base}...{branch}` shows it, "
            f"`git merge {branch}` takes it (`merge = true` in loop.toml merges a pass itself)",
            file=out,
        )
    elif result.branch:
        print(f"work is on branch {result.branch}", file=out)


def restore(args: argparse.Namespace) -> int:
    """Bring a loop's best round (``--round N``: that round) back into its work."""
    from harness.outer.keep import restore_round

    spec = _spec(Path(args.loop))
    print(restore_round(spec.progress_path(), spec.root / spec.workspace, args.round))
    return EXIT_PASSED


def report(args: argparse.Namespace) -> int:
    from harness.cli.batch import is_batch, report_batch
    from harness.cli.run_folders import find_run_under
    from harness.observe.report import render_text
    from harness.observe.run_summary import load_run

    if is_batch(args.run):
        return report_batch(args)

    folder = find_run_under(args.run, args.root)
    summary = load_run(folder)
    if args.html:  # first: a reader that stops early (`| head`) must not cost the file
        from harness.cli.run_page import write_page

        write_page(args.html, folder, summary)
        print(f"wrote {args.html}", file=sys.stderr)
    print(render_text(summary))
    return EXIT_PASSED


def show(args: argparse.Namespace) -> int:
    """A run's trajectory, step by step: through a pager on a terminal, else plain."""
    from harness.cli.run_folders import find_run_under
    from harness.observe.trajectory import Trajectory
    from harness.observe.trajectory_view import render_text

    trajectory = Trajectory.load(find_run_under(args.run, args.root))
    if args.round is not None and args.round not in trajectory.rounds():
        recorded = ", ".join(map(str, trajectory.rounds())) or "none"
        raise ConfigError(f"--round {args.round}: not in the trajectory (rounds: {recorded})")
    text = render_text(trajectory, args.round)
    if sys.stdout.isatty():
        import pydoc

        pydoc.pager(text)
    else:
        sys.stdout.write(text)
    return EXIT_PASSED


def replay(args: argparse.Namespace) -> int:
    """Re-run a recorded run with its recorded replies; exit 0 when nothing diverged, 3 when
    something did. With ``--live``, the run's own exit code, as ``harness run`` gives it."""
    from harness.cli.run_folders import find_run_under
    from harness.replay.run import replay_run

    folder = find_run_under(args.run, args.root)
    outcome = replay_run(
        folder, last_round=args.round, repo=args.repo, loop=args.loop or args.root, live=args.live
    )
    print(outcome.describe())
    if args.live:
        return run_exit_code(outcome.result)
    return EXIT_PASSED if outcome.divergence is None else EXIT_ESCALATED


def check(args: argparse.Namespace) -> int:
    import importlib

    module = importlib.import_module(CHECK_MODULES[args.kind])
    return module.main(args.arguments)


def batch(args: argparse.Namespace) -> int:
    from harness.cli.batch import run_batch

    return run_batch(args)


def bench(args: argparse.Namespace) -> int:
    from harness.cli.bench import run_swebench

    return run_swebench(args)


def calibrate(args: argparse.Namespace) -> int:
    from harness.cli.calibrate import run_calibrate

    return run_calibrate(_spec(Path(args.path)), args)


def runs(args: argparse.Namespace) -> int:
    from harness.cli.run_folders import all_runs
    from harness.observe.report import render_runs
    from harness.observe.run_summary import RUNS_DIR

    found = all_runs(args.root)
    where = f"{args.root / RUNS_DIR} or the loops under {args.root}"
    print(render_runs(found) if found else f"no runs under {where}")
    return EXIT_PASSED


def watch(args: argparse.Namespace) -> int:
    from harness.cli.watch import watch as run_watch

    return run_watch(args, _spec(args.path), print_verdict)


def clean(args: argparse.Namespace) -> int:
    from harness.cli.clean import clean_loops

    return clean_loops(
        Path(args.path),
        dry_run=args.dry_run,
        branches=args.branch,
        include_passed=args.include_passed,
    )
