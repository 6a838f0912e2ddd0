"""``harness bench swebench INSTANCES``: a benchmark's instances, one loop each, and its figures."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import cast

from harness.agent.config import RunnerName
from harness.cli.exit_codes import EXIT_ESCALATED, EXIT_PASSED
from harness.cli.runner_flag import runner_names
from harness.core.budget import Budget
from harness.core.errors import ConfigError
from harness.scale.batch import BatchProgress
from harness.scale.swebench import PREDICTIONS, RESULTS, SUMMARY, BenchOptions, run_bench
from harness.scale.swebench_envs import load_env_table
from harness.scale.swebench_instance import load_instances
from harness.scale.swebench_summary import BenchSummary, side_by_side


def run_swebench(args: argparse.Namespace) -> int:
    instances = load_instances(args.instances)
    out: Path = args.out or Path(".harness") / "bench" / Path(args.instances).stem
    runners = bench_runners(args.runner)
    summaries: list[tuple[str, BenchSummary]] = []
    for runner in runners:  # side by side: the same instances, each runner in a folder of its own
        folder = out / runner if len(runners) > 1 else out
        options = BenchOptions(
            out=folder,
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
            runner=cast(RunnerName, runner) if args.runner else None,
        )

        def show(progress: BatchProgress) -> None:
            if not args.quiet:
                print(progress.line(), file=sys.stderr, flush=True)

        summary = run_bench(instances, options, on_progress=show)
        summaries.append((runner, summary))
        if len(runners) > 1:
            print(f"runner      {runner}")
        print(summary.table())
        for name in (PREDICTIONS, RESULTS, SUMMARY):
            print(f"{name}: {folder / name}")
    if len(runners) > 1:
        print(side_by_side(summaries))
    every = sum(summary.instances * summary.attempts for _, summary in summaries)
    ended = sum(summary.ended for _, summary in summaries)
    return EXIT_PASSED if ended == every else EXIT_ESCALATED


def bench_runners(flag: str | None) -> list[str]:
    """The runners ``--runner`` names (default: the harness's agent), each once; ``command``
    cannot run a benchmark, whose loop.toml names no program."""
    if flag is None:
        return ["harness"]
    names = runner_names(flag)
    if "command" in names:
        raise ConfigError("--runner: 'command' needs [agent] command, which a benchmark's loop "
                          "has not; name an agent")  # fmt: skip
    if len(set(names)) != len(names):
        raise ConfigError(f"--runner: each runner once, got {flag!r}")
    return names
