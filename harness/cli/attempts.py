"""``harness run --attempts N`` (or ``attempts = N`` in loop.toml): best-of-N from loop.toml."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from harness.assemble.build import build_gate, build_sandbox, mcp_servers
from harness.assemble.env_setup import project_env
from harness.assemble.launch import recorded_loop
from harness.assemble.named_models import Overrides
from harness.cli.exit_codes import EXIT_ESCALATED, EXIT_PASSED
from harness.cli.runner_flag import runner_of
from harness.core.errors import ConfigError
from harness.observe.live import format_tokens
from harness.outer.loop import OuterLoop
from harness.scale.batch_summary import BatchSummary
from harness.scale.batch_task import TaskRecord
from harness.scale.best_of import Attempt, BestOf, BestOfResult, why_it_won
from harness.scale.side_by_side import side_by_side_table
from harness.scale.task_run import record_of
from harness.spec import LoopSpec
from harness.tools import Tool
from harness.tools.mcp import mcp_tools
from harness.verify.gate_config import ReproductionGateConfig
from harness.verify.reproduction import ReproductionGate

ATTEMPTS_DIR = Path(".harness") / "attempts"
"""Where ``harness run --attempts`` writes each loop's attempts summary, under the project root."""


def attempt_config(config: LoopSpec, number: int) -> LoopSpec:
    """Attempt ``number``'s loop: named ``<name>-attempt-<n>``, with its own progress file."""
    progress = config.progress_path()
    return config.with_changes(
        name=f"{config.name}-attempt-{number}",
        progress=str(progress.with_name(f"{progress.stem}-attempt-{number}.md")),
        attempts=1,
    )


def run_attempts(args: argparse.Namespace, config: LoopSpec, runners: Sequence[str]) -> int:
    """Best-of-N; with ``runners`` (``--runner a,b``) the attempts take them in turn, as many
    attempts as runners unless ``--attempts`` says, side by side under the same checks (fewer
    attempts than runners: exit 2 naming ``--runner``); the summary compares the runners."""
    count = args.attempts or (len(runners) if runners else config.attempts)
    if count < len(runners):
        raise ConfigError(
            f"--runner: {len(runners)} runners named but --attempts is {count}; give at least "
            "one attempt per runner (attempt i runs runner i, in turn)"
        )
    overrides = Overrides.from_flags(args)
    tools: list[Tool] = []  # the [[mcp]] servers' tools, shared by the attempts

    def loop_for(number: int) -> OuterLoop:
        attempt = attempt_config(config, number)
        runner = runner_of(runners, number)
        if runner is not None:
            attempt = attempt.with_runner(runner)
        return recorded_loop(attempt, overrides=overrides, tools=tools, start_servers=False)

    print(f"{count} attempts at: {config.goal}", file=sys.stderr)
    started = time.monotonic()
    with mcp_tools(mcp_servers(config), sandbox=build_sandbox(config)) as servers:
        tools.extend(servers)
        result = BestOf(
            loop_for, attempts=count, workspace=config.root / config.workspace,
            reproduction=_reproduction_gate(config),
        ).run()  # fmt: skip
    folder = config.root / ATTEMPTS_DIR / config.name
    each = {n: runner_of(runners, n) or config.agent.runner for n in range(1, count + 1)}
    summary = attempts_summary(result, wall_seconds=time.monotonic() - started, runners=each)
    summary.save(folder)
    for reason in summary.unsandboxed:
        print(f"note: {reason}", file=sys.stderr)
    if args.json:  # the summary itself, as saved in summary.json
        print(summary.model_dump_json())
    else:
        print(*_summary_lines(result, folder, runners, summary), sep="\n")
    return EXIT_PASSED if result.winner is not None else EXIT_ESCALATED


def _reproduction_gate(config: LoopSpec) -> ReproductionGate | None:
    """The loop's reproduction gate, in the loop's sandbox, for the attempts' vote; None
    without one."""
    found = next((g for g in config.gates if isinstance(g, ReproductionGateConfig)), None)
    if found is None:
        return None
    sandbox = build_sandbox(config, python_env=project_env(config))
    gate = build_gate(found, config.root, sandbox)
    assert isinstance(gate, ReproductionGate)
    return gate


def _summary_lines(
    result: BestOfResult, folder: Path, runners: Sequence[str], summary: BatchSummary
) -> list[str]:
    """What the attempts came to, for stdout: one line each (its runner, when ``--runner``
    named several), the runners side by side (when several ran), where the report is, the
    winner."""
    lines = [
        _describe(attempt, runner_of(runners, attempt.number))
        + (" <- winner" if attempt is result.winner else "")
        for attempt in result.attempts
    ]
    if len(summary.runners) > 1:
        lines += ["side by side:", *side_by_side_table(summary.runners).splitlines()]
    lines.append(f"report: harness report {folder}")
    winner = result.winner
    if winner is None:
        lines.append("no attempt passed; every attempt's branch and report is kept")
    else:
        branch = winner.result.branch if winner.result else None
        reason = why_it_won(result.attempts, winner)
        lines.append(f"winner: attempt {winner.number}, on branch {branch}: {reason}")
    return lines


def attempts_summary(
    result: BestOfResult, *, wall_seconds: float, runners: Mapping[int, str] | None = None
) -> BatchSummary:
    """The attempts as a batch summary (``harness report`` renders it), the winner named;
    ``runners``: each attempt's runner, by number (the summary compares them)."""
    names = runners or {}
    records = [
        record_of(
            f"attempt-{a.number}",
            None,
            a.result,
            sum(r.duration for r in a.result.rounds),
            runner=names.get(a.number),
        ).model_copy(update=_votes(a))
        if a.result is not None
        else TaskRecord(
            name=f"attempt-{a.number}",
            status="error",
            message=a.error or "",
            runner=names.get(a.number),
        )
        for a in result.attempts
    ]
    return BatchSummary.of(
        records,
        not_started=[],
        wall_seconds=wall_seconds,
        workers=len(records),
        backend="local",
        kind="attempts",
        winner=f"attempt-{result.winner.number}" if result.winner else None,
    )


def _votes(attempt: Attempt) -> dict[str, int]:
    votes = attempt.votes
    return {} if votes is None else {"others_tests_passed": votes.passed, "others_tests": votes.of}


def _describe(attempt: Attempt, runner: str | None) -> str:
    name = f"attempt {attempt.number}" + (f" ({runner})" if runner else "")
    if attempt.result is None:
        return f"{name}: could not run: {attempt.error}"
    score = f"score {attempt.score:g}" if attempt.score is not None else "no score"
    result = attempt.result
    votes = "" if attempt.votes is None else f"passes {attempt.votes} others' reproduction tests, "
    return (
        f"{name}: {result.stop_reason.value}, {score}, {votes}"
        f"{format_tokens(attempt.tokens)} tokens, {result.iterations} round(s), "
        f"run {result.run_id}, branch {result.branch or '-'}"
    )
