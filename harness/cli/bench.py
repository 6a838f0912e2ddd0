"""``harness bench swebench INSTANCES``: a benchmark's instances, one loop each, and its figures."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.cli.exit_codes import EXIT_ESCALATED, EXIT_PASSED
from harness.core.budget import Budget
from harness.scale.batch import BatchProgress
from harness.scale.swebench import PREDICTIONS, RESULTS, SUMMARY, BenchOptions, run_bench
from harness.scale.swebench_envs import load_env_table
from harness.scale.swebench_instance import load_instances


def run_swebench(args: argparse.Namespace) -> int:
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
    )

    def show(progress: BatchProgress) -> None:
        if not args.quiet:
            print(progress.line(), file=sys.stderr, flush=True)

    summary = run_bench(instances, options, on_progress=show)
    print(summary.table())
    for name in (PREDICTIONS, RESULTS, SUMMARY):
        print(f"{name}: {out / name}")
    every = summary.instances * summary.attempts
    return EXIT_PASSED if summary.ended == every else EXIT_ESCALATED
