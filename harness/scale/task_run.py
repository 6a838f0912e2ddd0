"""One batch task's loop, run to its end and turned into a record; never raises for the task."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness.core.errors import HarnessError
from harness.core.stop import StopReason
from harness.outer.result import RunResult
from harness.scale.batch_task import BatchTask, Status, TaskRecord

if TYPE_CHECKING:
    from harness.outer.loop import OuterLoop


@dataclass(frozen=True)
class TaskRun:
    """What the batch gives one start of a task: its run id and where its progress file lives."""

    run_id: str
    progress: Path
    starts: int = 1


def run_task(
    task: BatchTask, run: TaskRun, loop_for: Callable[[BatchTask, TaskRun], OuterLoop]
) -> TaskRecord:
    """Build the task's loop and run it; a loop that cannot be built is an ``error`` record."""
    started = time.monotonic()
    try:
        result = loop_for(task, run).run()
    except HarnessError as exc:
        return _failed(task, run, str(exc), started)
    except Exception as exc:  # noqa: BLE001 - one task's bug is recorded; the batch goes on
        return _failed(task, run, f"{type(exc).__name__}: {exc}", started)
    return record_of(task, run, result, time.monotonic() - started)


def record_of(task: BatchTask, run: TaskRun, result: RunResult, seconds: float) -> TaskRecord:
    status: Status = (
        "passed"
        if result.passed
        else "interrupted"
        if result.stop_reason is StopReason.CANCELLED
        else "error"
        if result.stop_reason is StopReason.ERROR
        else "escalated"
    )
    return TaskRecord(
        name=task.name,
        status=status,
        stop_reason=result.stop_reason.value,
        message=result.message,
        rounds=result.iterations,
        prompt_tokens=result.usage.prompt_tokens,
        completion_tokens=result.usage.completion_tokens,
        cost_usd=result.usage.cost_usd,
        seconds=round(seconds, 3),
        branch=result.branch,
        run_id=result.run_id,
        starts=run.starts,
    )


def _failed(task: BatchTask, run: TaskRun, message: str, started: float) -> TaskRecord:
    return TaskRecord(
        name=task.name,
        status="error",
        stop_reason=StopReason.ERROR.value,
        message=message,
        seconds=round(time.monotonic() - started, 3),
        starts=run.starts,
    )
