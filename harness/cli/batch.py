"""``harness batch TASKS.jsonl``: many loop.toml loops at once; and a batch's report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.cli.config import LoopConfig, load_config
from harness.cli.exit_codes import EXIT_ESCALATED, EXIT_PASSED
from harness.cli.runner import Overrides, build_loop
from harness.core.errors import ConfigError
from harness.models.budget import Budget
from harness.observe.events import EVENTS_FILE, EventLog
from harness.observe.run_summary import RUNS_DIR
from harness.outer.loop import OuterLoop
from harness.scale.batch import Batch, BatchProgress
from harness.scale.batch_report import render_batch_html, render_batch_text
from harness.scale.batch_summary import SUMMARY_FILE, BatchSummary
from harness.scale.batch_task import BatchTask, load_tasks
from harness.scale.task_run import TaskRun


def loop_from_toml(task: BatchTask, run: TaskRun) -> OuterLoop:
    """The loop ``task.loop`` declares, with the task's overrides, its own name and progress.

    The loop is named after the task (so its branch is ``harness/<task>-<id>``), its progress
    file is the batch's, and its events go to ``.harness/runs/<run id>/`` beside the loop.toml,
    so ``harness report <run id>`` works as for a single run.
    """
    if task.loop is None:
        raise ConfigError(f"task {task.name}: field 'loop': required to run a loop.toml task")
    config, root = load_config(task.loop)
    if config.mcp:
        raise ConfigError(
            f"task {task.name}: {task.loop}: [[mcp]] servers are not started for batch tasks; "
            "run this loop with `harness run`"
        )
    data = config.model_dump()
    data.update(name=task.name, progress=str(run.progress.resolve()))
    for key in ("goal", "workspace", "max_iterations"):
        if getattr(task, key) is not None:
            data[key] = getattr(task, key)
    if task.budget is not None:
        data["budget"] = task.budget.model_dump()
    config = LoopConfig.model_validate(data)
    redactor = config.redactor(root)
    events = EventLog(
        root / RUNS_DIR / run.run_id / EVENTS_FILE, run_id=run.run_id, redactor=redactor
    )
    try:
        return build_loop(
            config, root, overrides=Overrides(model=task.model), events=events,
            run_id=run.run_id, redact=redactor.redact_text,
        )  # fmt: skip
    except ConfigError as exc:
        raise ConfigError(f"{task.loop}: {exc}") from exc


def run_batch(args: argparse.Namespace) -> int:
    tasks = load_tasks(args.tasks)
    out: Path = args.out or Path(".harness") / "batch" / Path(args.tasks).stem
    live = sys.stderr.isatty()

    def show(progress: BatchProgress) -> None:
        if not args.quiet:
            end = "" if live else "\n"
            print(
                ("\r\x1b[K" if live else "") + progress.line(), end=end, file=sys.stderr, flush=True
            )

    batch = Batch(
        tasks,
        loop_from_toml,
        workers=args.workers,
        backend=args.backend,
        out=out,
        budget=Budget(tokens=args.budget_tokens, cost_usd=args.budget_cost),
        on_progress=show,
        ray_address=args.ray_address,
        rate_limits=dict(args.rate_limit),
    )
    summary = batch.run()
    if live and not args.quiet:
        print(file=sys.stderr)
    print(render_batch_text(summary))
    print(f"summary: {out / SUMMARY_FILE}")
    everything_passed = summary.counts.get("passed", 0) == len(tasks)
    return EXIT_PASSED if everything_passed else EXIT_ESCALATED


def is_batch(path: str) -> bool:
    """Whether ``harness report PATH`` names a batch (its folder or its summary.json)."""
    target = Path(path)
    return (target / SUMMARY_FILE).is_file() or (target.name == SUMMARY_FILE and target.is_file())


def report_batch(args: argparse.Namespace) -> int:
    summary = BatchSummary.load(Path(args.run))
    print(render_batch_text(summary))
    if args.html:
        try:
            args.html.write_text(render_batch_html(summary), encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"--html {args.html}: cannot write: {exc.strerror}") from exc
        print(f"wrote {args.html}")
    return EXIT_PASSED
