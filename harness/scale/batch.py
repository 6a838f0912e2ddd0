"""Batches: a list of independent tasks, each a full outer loop, run by a bounded pool.

A batch is resumable. Each task's record is written atomically to ``<out>/tasks/<name>/`` as
``running`` before its loop starts and with its ending after; a re-run skips every task whose
record says it ended (passed, escalated or error) and runs the others again (an interrupted
task's loop resumes from its own progress file). A batch-wide budget stops starting new tasks
once the ended tasks have spent it. ``summary.json`` is rewritten after every task.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Annotated

from pydantic import Field

from harness.core import nofollow
from harness.core.budget import Budget
from harness.core.nofollow import trusted_root
from harness.core.section import check_value
from harness.core.usage import Usage
from harness.core.validation import positive_finite
from harness.memory.lock import LoopLock
from harness.models.rate_limit import Limiter
from harness.outer.loop import OuterLoop
from harness.outer.options import new_run_id
from harness.scale.batch_summary import SUMMARY_FILE, BatchSummary
from harness.scale.batch_task import BatchTask, TaskRecord, check_names, read_record
from harness.scale.job import Backend, Job, Place
from harness.scale.pool import check_backend, open_pool, run_all
from harness.scale.task_run import TaskRun, placed_task, run_task

Workers = Annotated[int, Field(ge=1, le=64, strict=True)]
"""Loops mostly wait on their model, so a pool may be larger than the number of cores."""

LoopFor = Callable[[BatchTask, TaskRun], OuterLoop]


@dataclass(frozen=True)
class BatchProgress:
    """Where a running batch stands, for a live progress line."""

    total: int
    done: int
    running: int
    failed: int
    not_started: int
    usage: Usage
    elapsed: float
    eta: float | None
    stopping: bool = False

    def line(self) -> str:
        from harness.observe.live import format_cost, format_duration, format_tokens

        eta = f", ETA {format_duration(self.eta)}" if self.eta is not None else ""
        held = f", {self.not_started} not started" if self.not_started else ""
        if self.stopping:
            eta = ", stopping: waiting for the running tasks (interrupt again to quit now)"
        return (
            f"batch: {self.done}/{self.total} done, {self.running} running, "
            f"{self.failed} failed{held}, {format_tokens(self.usage.total_tokens)} tokens, "
            f"{format_cost(self.usage.cost_usd)}, {format_duration(self.elapsed)}{eta}"
        )


class Batch:
    """Run ``tasks`` with ``loop_for(task, run)`` building each task's :class:`OuterLoop`.

    ``loop_for`` must put the loop's progress file at ``run.progress`` and use ``run.run_id``;
    without one, each task names a ``loop.toml`` (:func:`harness.scale.toml_loop.loop_from_toml`).
    ``rate_limits`` maps a model name to the requests per minute every worker shares.
    A first ``KeyboardInterrupt`` starts no further task and lets the running ones end and be
    recorded; a second one quits at once (the tasks still running then run again next time).
    """

    def __init__(
        self,
        tasks: Sequence[BatchTask | Mapping[str, object]],
        loop_for: LoopFor | None = None,
        *,
        workers: int = 4,
        backend: Backend = "local",
        out: str | Path = Path(".harness") / "batch",
        budget: Budget | None = None,
        on_progress: Callable[[BatchProgress], None] | None = None,
        ray_address: str | None = None,
        num_cpus: float = 1,
        rate_limits: Mapping[str, float] | None = None,
    ) -> None:
        parsed = [t if isinstance(t, BatchTask) else BatchTask.model_validate(t) for t in tasks]
        check_names(parsed)
        check_value(Workers, workers, "workers")
        check_backend(backend)
        if loop_for is None:
            from harness.scale.toml_loop import loop_from_toml

            loop_for = loop_from_toml
        self.tasks = parsed
        self.loop_for = loop_for
        self.workers = workers
        self.backend = backend
        self.out = Path(out)
        self.budget = budget or Budget()
        self.on_progress = on_progress
        self.ray_address = ray_address
        self.num_cpus = num_cpus
        self.rate_limits = dict(rate_limits or {})
        self.stopping = False
        for model, per_minute in self.rate_limits.items():
            positive_finite(f"rate_limits.{model}", per_minute)

    def run(self) -> BatchSummary:
        """Run every task that has not ended yet; return (and save) the summary.

        One batch at a time per output folder: a second one raises :class:`LockHeld`. No link
        is followed below the folder a relative ``out`` starts from (else below ``out``'s
        parent) to reach the records, the summary and the lock
        (:func:`~harness.core.nofollow.trusted_root`).
        """
        root = Path.cwd() if not self.out.is_absolute() else self.out.parent
        with trusted_root(root):
            os.close(nofollow.open_folder(self.out, make=True))
            with LoopLock(self.out / SUMMARY_FILE):
                return self._run()

    def _run(self) -> BatchSummary:
        started = time.monotonic()
        self.stopping = False
        earlier = {t.name: read_record(self.out, t.name) for t in self.tasks}
        records = {name: r for name, r in earlier.items() if r is not None and r.ended}
        queue = deque(t for t in self.tasks if t.name not in records)
        begun: list[tuple[BatchTask, TaskRun]] = []  # in the order they were started
        held: list[str] = []
        pool = open_pool(self.backend, address=self.ray_address, num_cpus=self.num_cpus)
        limiters = {name: pool.limiter(name, rpm) for name, rpm in self.rate_limits.items()}

        def jobs() -> Iterator[Job[TaskRecord]]:
            """The queued tasks, each recorded as running when a worker is free for it, until
            the batch budget is spent."""
            while queue and not self._spent_budget(records.values()):
                task = queue.popleft()
                run = self._begin(task, earlier[task.name])
                begun.append((task, run))
                yield Job(
                    task.name,
                    partial(_run_placed, task, run, self.loop_for, limiters),
                    loop=task.loop,
                    workspace=task.workspace,
                    progress=run.progress,
                    run_id=run.run_id,
                )
            hold()

        def hold() -> None:
            held.extend(t.name for t in queue)
            queue.clear()

        def ended(index: int, outcome: TaskRecord | BaseException) -> None:
            task, run = begun[index]
            if not isinstance(outcome, Exception | TaskRecord):
                raise outcome
            if isinstance(outcome, Exception):  # the pool gave up on it (a Ray worker that kept
                # dying, a branch not the run's): an error record
                outcome = TaskRecord(
                    name=task.name,
                    status="error",
                    stop_reason="ERROR",
                    message=f"{pool.backend}: {type(outcome).__name__}: {outcome}",
                    starts=run.starts,
                )
            records[task.name] = outcome
            outcome.save(self.out)
            tell()

        def stopping() -> None:  # start nothing more; let the running tasks end
            self.stopping = True
            hold()
            tell()

        def tell() -> None:
            self._save(records, held, started)
            self._notify(records, begun, len(queue), held, started)

        with closing(pool):  # a second interrupt quits at once: the running tasks re-run next time
            run_all(pool, jobs(), at_once=self.workers, ended=ended, stopping=stopping)
        return self._save(records, held, started)

    def _begin(self, task: BatchTask, before: TaskRecord | None) -> TaskRun:
        """A start of ``task``, recorded as running."""
        run = TaskRun(
            run_id=new_run_id(),
            progress=self.out / "tasks" / task.name / "progress.md",
            starts=before.starts + 1 if before else 1,
        )
        TaskRecord(name=task.name, status="running", starts=run.starts).save(self.out)
        return run

    def _spent_budget(self, records: Iterable[TaskRecord]) -> bool:
        spent = sum((r.usage for r in records), start=Usage())
        tokens, cost = self.budget.tokens, self.budget.cost_usd
        return (tokens is not None and spent.total_tokens >= tokens) or (
            cost is not None and spent.cost_usd >= cost
        )

    def _save(
        self, records: dict[str, TaskRecord], held: list[str], started: float
    ) -> BatchSummary:
        ordered = [records[t.name] for t in self.tasks if t.name in records]
        summary = BatchSummary.of(
            ordered,
            not_started=held,
            wall_seconds=time.monotonic() - started,
            workers=self.workers,
            backend=self.backend,
        )
        summary.save(self.out)
        return summary

    def _notify(
        self,
        records: dict[str, TaskRecord],
        begun: Sequence[tuple[BatchTask, TaskRun]],
        queued: int,
        held: list[str],
        started: float,
    ) -> None:
        if self.on_progress is None:
            return
        elapsed = time.monotonic() - started
        finished_here = sum(records.get(task.name) is not None for task, _ in begun)
        running = len(begun) - finished_here
        left = queued + running
        eta = elapsed / finished_here * left if finished_here and left else None
        self.on_progress(
            BatchProgress(
                total=len(self.tasks),
                done=len(records),
                running=running,
                failed=sum(r.status != "passed" for r in records.values()),
                not_started=len(held),
                usage=sum((r.usage for r in records.values()), start=Usage()),
                elapsed=elapsed,
                eta=eta,
                stopping=self.stopping,
            )
        )


def _run_placed(
    task: BatchTask,
    run: TaskRun,
    loop_for: LoopFor,
    limiters: Mapping[str, Limiter],
    place: Place,
) -> TaskRecord:
    """Run the task where the pool put it: its paths and progress file as ``place`` has them."""
    placed = replace(run, progress=place.progress(run.progress))
    return run_task(placed_task(task, place), placed, loop_for, limiters=limiters)
