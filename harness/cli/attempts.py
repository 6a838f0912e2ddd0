"""``harness run --attempts N`` (or ``attempts = N`` in loop.toml): best-of-N from loop.toml."""

from __future__ import annotations

import argparse
import sys
import uuid
from pathlib import Path

from harness.cli.config import LoopConfig
from harness.cli.exit_codes import EXIT_ESCALATED, EXIT_PASSED
from harness.cli.runner import Overrides, build_loop
from harness.core.redact import Redactor
from harness.observe.events import EVENTS_FILE, EventLog
from harness.observe.live import format_tokens
from harness.observe.run_summary import RUNS_DIR
from harness.outer.loop import OuterLoop
from harness.scale.best_of import Attempt, BestOf


def attempt_config(config: LoopConfig, root: Path, number: int) -> LoopConfig:
    """Attempt ``number``'s loop: named ``<name>-attempt-<n>``, with its own progress file."""
    progress = config.progress_path(root)
    return config.model_copy(
        update={
            "name": f"{config.name}-attempt-{number}",
            "progress": str(progress.with_name(f"{progress.stem}-attempt-{number}.md")),
            "attempts": 1,
        }
    )


def run_attempts(args: argparse.Namespace, config: LoopConfig, root: Path) -> int:
    count = args.attempts or config.attempts
    overrides = Overrides(args.model, args.critic_model, args.max_iterations, args.restart)
    redactor = Redactor(config.redact)

    def loop_for(number: int) -> OuterLoop:
        run_id = uuid.uuid4().hex[:8]
        events = EventLog(root / RUNS_DIR / run_id / EVENTS_FILE, run_id=run_id, redactor=redactor)
        return build_loop(
            attempt_config(config, root, number), root, overrides=overrides, events=events,
            run_id=run_id, redact=redactor.redact_text,
        )  # fmt: skip

    print(f"{count} attempts at: {config.goal}", file=sys.stderr)
    result = BestOf(loop_for, attempts=count).run()
    for attempt in result.attempts:
        mark = " <- winner" if attempt is result.winner else ""
        print(f"{_describe(attempt)}{mark}", file=sys.stderr)
    if result.winner is None:
        print("no attempt passed; every attempt's branch and report is kept", file=sys.stderr)
        return EXIT_ESCALATED
    print(f"winner: attempt {result.winner.number}, on branch "
          f"{result.winner.result.branch if result.winner.result else None}", file=sys.stderr)  # fmt: skip
    return EXIT_PASSED


def _describe(attempt: Attempt) -> str:
    if attempt.result is None:
        return f"attempt {attempt.number}: could not run: {attempt.error}"
    score = f"score {attempt.score:g}" if attempt.score is not None else "no score"
    result = attempt.result
    return (
        f"attempt {attempt.number}: {result.stop_reason.value}, {score}, "
        f"{format_tokens(attempt.tokens)} tokens, {result.iterations} round(s), "
        f"run {result.run_id}, branch {result.branch or '-'}"
    )
