"""Batches: a list of independent tasks, each a full outer loop, run by a bounded pool.

A batch is resumable. Each task's record is written atomically to ``<out>/tasks/<name>/`` as
``running`` before its loop starts and with its ending after; a re-run skips every task whose
record says it ended (passed, escalated or error) and runs the others again (an interrupted
task's loop resumes from its own progress file). A batch-wide budget stops starting new tasks
once the ended tasks have spent it. ``summary.json`` is rewritten after every task.
"""

from __future__ import annotations

import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from harness.core.errors import ConfigError
from harness.core.usage import Usage
from harness.models.budget import Budget
from harness.outer.loop import OuterLoop
from harness.scale.batch_summary import BatchSummary
from harness.scale.batch_task import BatchTask, TaskRecord, check_names, read_record
from harness.scale.task_run import TaskRun, run_task

Backend = Literal["local", "ray"]
MAX_WORKERS = 64
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

    def line(self) -> str:
        from harness.observe.live import format_cost, format_duration, format_tokens

        eta = f", ETA {format_duration(self.eta)}" if self.eta is not None else ""
        held = f", {self.not_started} held by the budget" if self.not_started else ""
        return (
            f"batch: {self.done}/{self.total} done, {self.running} running, "
            f"{self.failed} failed{held}, {format_tokens(self.usage.total_tokens)} tokens, "
            f"{format_cost(self.usage.cost_usd)}, {format_duration(self.elapsed)}{eta}"
        )


class Executor(Protocol):
    """Where task loops run: a local thread pool or a Ray cluster."""

    def submit(self, task: BatchTask, run: TaskRun) -> Future[TaskRecord]: ...

    def close(self) -> None: ...


class Batch:
    """Run ``tasks`` with ``loop_for(task, run)`` building each task's :class:`OuterLoop`.

    ``loop_for`` must put the loop's progress file at ``run.progress`` and use ``run.run_id``
    (:func:`harness.cli.batch.loop_from_toml` does, for tasks that name a ``loop.toml``).
    """

    def __init__(
        self,
        tasks: Sequence[BatchTask | Mapping[str, object]],
        loop_for: LoopFor,
        *,
        workers: int = 4,
        backend: Backend = "local",
        out: str | Path = Path(".harness") / "batch",
        budget: Budget | None = None,
        on_progress: Callable[[BatchProgress], None] | None = None,
        ray_address: str | None = None,
        num_cpus: float = 1,
    ) -> None:
        parsed = [t if isinstance(t, BatchTask) else BatchTask.model_validate(t) for t in tasks]
        check_names(parsed)
        if (
            isinstance(workers, bool)
            or not isinstance(workers, int)
            or not 1 <= workers <= MAX_WORKERS
        ):
            raise ConfigError(
                f"workers: must be an integer from 1 to {MAX_WORKERS}, got {workers!r}"
            )
        if backend not in ("local", "ray"):
            raise ConfigError(f"backend: must be 'local' or 'ray', got {backend!r}")
        self.tasks = parsed
        self.loop_for = loop_for
        self.workers = workers
        self.backend = backend
        self.out = Path(out)
        self.budget = budget or Budget()
        self.on_progress = on_progress
        self.ray_address = ray_address
        self.num_cpus = num_cpus

    def run(self) -> BatchSummary:
        """Run every task that has not ended yet; return (and save) the summary."""
        started = time.monotonic()
        self.out.mkdir(parents=True, exist_ok=True)
        earlier = {t.name: read_record(self.out, t.name) for t in self.tasks}
        records = {name: r for name, r in earlier.items() if r is not None and r.ended}
        queue = deque(t for t in self.tasks if t.name not in records)
        running: dict[Future[TaskRecord], BatchTask] = {}
        held: list[str] = []
        finished_here = 0
        executor = self._executor()
        try:
            while queue or running:
                while queue and len(running) < self.workers:
                    if self._spent_budget(records.values()):
                        held.extend(t.name for t in queue)
                        queue.clear()
                        break
                    task = queue.popleft()
                    before = earlier[task.name]
                    run = TaskRun(
                        run_id=uuid.uuid4().hex[:8],
                        progress=self.out / "tasks" / task.name / "progress.md",
                        starts=before.starts + 1 if before else 1,
                    )
                    TaskRecord(name=task.name, status="running", starts=run.starts).save(self.out)
                    running[executor.submit(task, run)] = task
                if not running:
                    break
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    task = running.pop(future)
                    record = future.result()
                    record.save(self.out)
                    records[task.name] = record
                    finished_here += 1
                self._save(records, held, started)
                self._notify(records, running, queue, held, started, finished_here)
        finally:
            executor.close()
        return self._save(records, held, started)

    def _executor(self) -> Executor:
        if self.backend == "ray":
            from harness.scale.ray_backend import RayExecutor

            return RayExecutor(self.loop_for, address=self.ray_address, num_cpus=self.num_cpus)
        return LocalExecutor(self.loop_for, workers=self.workers)

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
        running: dict[Future[TaskRecord], BatchTask],
        queue: deque[BatchTask],
        held: list[str],
        started: float,
        finished_here: int,
    ) -> None:
        if self.on_progress is None:
            return
        elapsed = time.monotonic() - started
        left = len(queue) + len(running)
        eta = elapsed / finished_here * left if finished_here and left else None
        self.on_progress(
            BatchProgress(
                total=len(self.tasks),
                done=len(records),
                running=len(running),
                failed=sum(r.status != "passed" for r in records.values()),
                not_started=len(held),
                usage=sum((r.usage for r in records.values()), start=Usage()),
                elapsed=elapsed,
                eta=eta,
            )
        )


class LocalExecutor:
    """Task loops in threads of this process: they spend their time waiting on models and git."""

    def __init__(self, loop_for: LoopFor, *, workers: int) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.loop_for = loop_for
        self.pool = ThreadPoolExecutor(workers, thread_name_prefix="batch")

    def submit(self, task: BatchTask, run: TaskRun) -> Future[TaskRecord]:
        return self.pool.submit(run_task, task, run, self.loop_for)

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)
