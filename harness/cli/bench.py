"""``harness bench swebench INSTANCES``: a benchmark's instances, one loop each, and its figures;
with ``--runner a,b``, the runners side by side over the same instances."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from harness.cli.exit_codes import EXIT_ESCALATED, EXIT_PASSED
from harness.cli.runner_flag import runner_names
from harness.core.budget import Budget
from harness.core.errors import ConfigError
from harness.scale.batch import BatchProgress
from harness.scale.batch_report import error_lines
from harness.scale.batch_summary import BatchSummary
from harness.scale.swebench import BenchOptions, run_bench
from harness.scale.swebench_envs import load_env_table
from harness.scale.swebench_instance import load_instances
from harness.scale.swebench_outputs import PREDICTIONS, RESULTS, SUMMARY
from harness.scale.swebench_summary import SideBySide


def run_swebench(args: argparse.Namespace) -> int:
    runners = tuple(runner_names(args.runner, repeats=False)) if args.runner else ()
    command = agent_command(args.agent_command, "command" in runners)
    instances = load_instances(args.instances)
    out: Path = args.out or Path(".harness") / "bench" / Path(args.instances).stem
    options = BenchOptions(
        out=out,
        model=args.model,
        repos=args.repos,
        max_iterations=args.max_iterations,
        feedback=args.feedback,
        hints=args.hints,
        workers=args.workers,
        attempts=args.attempts,
        backend=args.backend,
        ray_address=args.ray_address,
        envs=load_env_table(args.envs) if args.envs else None,
        budget=Budget(cost_usd=args.budget_cost),
        runners=runners,
        agent_command=command,
    )

    def show(progress: BatchProgress) -> None:
        if not args.quiet:
            print(progress.line(), file=sys.stderr, flush=True)

    summary = run_bench(instances, options, on_progress=show)
    print(summary.table())
    sides = summary.summaries if isinstance(summary, SideBySide) else [summary]
    for side in options.sides:
        for name in (PREDICTIONS, RESULTS, SUMMARY):
            print(f"{name}: {side.folder(out) / name}")
    if isinstance(summary, SideBySide):
        print(f"{SUMMARY}: {out / SUMMARY} (side by side)")
    for line in error_lines(BatchSummary.load(out / "batch")):
        print(line)
    ended = all(s.ended == s.instances * s.attempts for s in sides)
    return EXIT_PASSED if ended else EXIT_ESCALATED


def agent_command(text: str | None, needed: bool) -> tuple[str, ...] | None:
    """``--agent-command``'s words; a ConfigError naming it when runner ``command`` needs it
    and it is missing, or it is given and no runner uses it."""
    if text is None:
        if needed:
            raise ConfigError("--agent-command: required by --runner command (the program to run)")
        return None
    if not needed:
        raise ConfigError("--agent-command: only runner command uses it; add it to --runner")
    try:
        words = tuple(shlex.split(text))
    except ValueError as exc:
        raise ConfigError(f"--agent-command: cannot be split as a shell would: {exc}") from None
    if not words:
        raise ConfigError("--agent-command: names no program")
    return words
