"""Command-line arguments of the scale-out commands (``harness batch``, ``harness bench``).

Kept free of heavy imports: ``harness --help`` builds these parsers."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

FEEDBACK_CHOICES = ("none", "pass_fail", "ids")
"""``harness.verify.held_out.FEEDBACK``, named here so the parser imports nothing heavy."""


def positive_int(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return int(text)


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, got {text!r}")
    return value


def _rate_limit(text: str) -> tuple[str, float]:
    model, _, rate = text.rpartition("=")
    if not model:
        raise argparse.ArgumentTypeError(f"expected MODEL=REQUESTS_PER_MINUTE, got {text!r}")
    return model, positive_float(rate)


def add_batch_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    batch = commands.add_parser(
        "batch", help="run every task of a JSONL file, each a full loop (resumable)"
    )
    batch.add_argument("tasks", help='a JSONL file: one {"name": ..., "loop": "loop.toml"} a line')
    batch.add_argument("--workers", type=positive_int, default=4, help="loops at once (default 4)")
    add_backend_arguments(batch)
    batch.add_argument(
        "--out", type=Path, help="records and summary.json (default .harness/batch/<file stem>)"
    )
    batch.add_argument(
        "--budget-tokens", type=positive_int, help="start no task past this many tokens"
    )
    batch.add_argument(
        "--budget-cost", type=positive_float, help="start no task past this cost (USD)"
    )
    batch.add_argument(
        "--rate-limit",
        type=_rate_limit,
        action="append",
        default=[],
        metavar="MODEL=RPM",
        help="requests per minute to MODEL, shared by every worker (repeatable)",
    )
    add_runner_argument(
        batch,
        "every task once per runner, named <task>.<runner> when more than one (a task's own "
        "runner wins; default: each loop.toml's [agent] runner)",
    )
    batch.add_argument("--quiet", action="store_true", help="no live progress line")


def add_runner_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """``--runner a,b,...``: the runners side by side (checked by
    :func:`harness.cli.runner_flag.runner_names`)."""
    parser.add_argument(
        "--runner",
        metavar="NAMES",
        help="harness, claude-code, codex, aider, mini-swe-agent or command, or a comma list: "
        + what,
    )


def add_backend_arguments(parser: argparse.ArgumentParser) -> None:
    """``--backend`` and ``--ray-address``: where a batch's loops run."""
    parser.add_argument(
        "--backend",
        choices=("local", "ray"),
        default="local",
        help="where the loops run (default local; ray ships each loop to a worker)",
    )
    parser.add_argument(
        "--ray-address", help="join this Ray cluster (default: RAY_ADDRESS, else a local one)"
    )


def attempts_count(text: str) -> int:
    value = positive_int(text)
    if value > 8:
        raise argparse.ArgumentTypeError(f"must be an integer from 1 to 8, got {text!r}")
    return value


def add_bench_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bench = commands.add_parser("bench", help="run a benchmark's instances, one loop each")
    kinds = bench.add_subparsers(dest="benchmark", required=True, metavar="BENCHMARK")
    swebench = kinds.add_parser(
        "swebench",
        help="SWE-bench-format instances: held-out tests decide, preds.jsonl comes out",
    )
    swebench.add_argument("instances", help="instance records: a JSONL file or a JSON list")
    swebench.add_argument(
        "--repos",
        type=Path,
        help="a folder of clones or mirrors, OWNER__NAME or OWNER/NAME (default: clone the URL)",
    )
    swebench.add_argument(
        "--model",
        required=True,
        help="the agent's model; 'gold' writes each reference patch, 'empty' changes nothing",
    )
    swebench.add_argument(
        "--out", type=Path, help="where everything goes (default .harness/bench/<file stem>)"
    )
    swebench.add_argument("--workers", type=positive_int, default=2, help="loops at once")
    add_backend_arguments(swebench)
    swebench.add_argument(
        "--max-iterations", type=positive_int, default=3, help="rounds per instance (default 3)"
    )
    swebench.add_argument(
        "--feedback",
        choices=FEEDBACK_CHOICES,
        default="pass_fail",
        help="what the agent is told of failing held-out tests (default pass_fail)",
    )
    swebench.add_argument("--hints", action="store_true", help="add hints_text to the goal")
    swebench.add_argument(
        "--envs",
        type=Path,
        help="a TOML table of set-up commands per repo/version: each environment made once "
        "per (repo, environment_setup_commit) and kept (default: the harness's Python)",
    )
    swebench.add_argument(
        "--attempts",
        type=attempts_count,
        default=1,
        help="independent attempts per instance, 1 to 8, for pass@k (default 1)",
    )
    swebench.add_argument(
        "--budget-cost", type=positive_float, help="start no instance past this cost (USD)"
    )
    add_runner_argument(
        swebench,
        "every instance attempted once per runner, under the same held-out tests; each "
        "runner's preds, results and trajectories in <out>/<runner>/ (default: harness)",
    )
    swebench.add_argument(
        "--agent-command",
        metavar="COMMAND",
        help="runner command's program and arguments, split as a shell does "
        "({task_file}: the task's file; else the task on stdin)",
    )
    swebench.add_argument("--quiet", action="store_true", help="no live progress line")
