"""``harness batch TASKS.jsonl``: many loop.toml loops at once; and a batch's report."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from harness.cli.exit_codes import EXIT_ESCALATED, EXIT_PASSED
from harness.cli.runner_flag import runner_names
from harness.core.budget import Budget
from harness.core.errors import ConfigError
from harness.core.text import raw_stream
from harness.scale.batch import Batch, BatchProgress
from harness.scale.batch_report import render_batch_html, render_batch_text
from harness.scale.batch_summary import SUMMARY_FILE, BatchSummary
from harness.scale.batch_task import NAME_PATTERN, load_tasks, per_runner
from harness.scale.toml_loop import loop_from_toml


def run_batch(args: argparse.Namespace) -> int:
    tasks = load_tasks(args.tasks)
    if args.runner:
        tasks = per_runner(tasks, runner_names(args.runner, repeats=False))
    out: Path = args.out or Path(".harness") / "batch" / Path(args.tasks).stem
    live = sys.stderr.isatty()

    def show(progress: BatchProgress) -> None:
        if not args.quiet:
            if live:  # the line drawn again in place: the display's own sequence, past the door
                raw_stream(sys.stderr).write("\r\x1b[K")
            print(progress.line(), end="" if live else "\n", file=sys.stderr, flush=True)

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
    """The batch's table; with ``--html FILE``, a page linking each task's own report, written
    beside it as ``FILE-STEM.TASK.html`` (for the tasks whose run is found under ``--root``)."""
    summary = BatchSummary.load(Path(args.run))
    if args.html:  # first: a reader that stops early (`| head`) must not cost the files
        from harness.cli.run_page import write_html

        links = _task_pages(summary, args.html, args.root)
        write_html(args.html, render_batch_html(summary, links=links))
        print(f"wrote {args.html} and {len(links)} task report(s) beside it", file=sys.stderr)
    print(render_batch_text(summary))
    return EXIT_PASSED


def _task_pages(summary: BatchSummary, page: Path, root: Path) -> dict[str, str]:
    """Write the report of each task whose run is found under ``root`` beside ``page``; each
    task's name and its page's name relative to ``page``."""
    from harness.cli.run_folders import find_run_under
    from harness.cli.run_page import write_page
    from harness.observe.run_summary import load_run

    links = {}
    for task in summary.tasks:
        if task.run_id is None or not re.fullmatch(NAME_PATTERN, task.name):  # summary.json: data
            continue
        try:
            folder = find_run_under(task.run_id, root)
        except ConfigError:  # its run is elsewhere (another root, a cleaned folder)
            continue
        name = f"{page.stem}.{task.name}.html"
        write_page(page.with_name(name), folder, load_run(folder))
        links[task.name] = name
    return links
