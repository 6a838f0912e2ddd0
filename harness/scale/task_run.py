"""One batch task's loop, run to its end and turned into a record; never raises for the task."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness.core.errors import HarnessError
from harness.core.stop import StopReason
from harness.models.base import Model
from harness.models.rate_limit import Limiter, RateLimitedModel
from harness.outer.result import RunResult
from harness.runners import runner_name
from harness.scale.batch_task import BatchTask, Status, TaskRecord
from harness.scale.job import Place

if TYPE_CHECKING:
    from harness.outer.loop import OuterLoop

ENDINGS: dict[StopReason, Status] = {StopReason.CANCELLED: "interrupted", StopReason.ERROR: "error"}
"""The status of a loop that stopped for these reasons; any other stop but a pass escalated."""
SCRIPTED = "scripted:"
"""The prefix of a scripted model's name: a file, found in the copy when it was shipped."""


@dataclass(frozen=True)
class TaskRun:
    """What the batch gives one start of a task: its run id and where its progress file lives."""

    run_id: str
    progress: Path
    starts: int = 1


def run_task(
    task: BatchTask,
    run: TaskRun,
    loop_for: Callable[[BatchTask, TaskRun], OuterLoop],
    *,
    limiters: Mapping[str, Limiter] | None = None,
) -> TaskRecord:
    """Build the task's loop and run it; a loop that cannot be built is an ``error`` record.

    ``limiters`` (model name -> limiter) make the loop's model calls wait for their turn.
    """
    started = time.monotonic()
    try:
        loop = loop_for(task, run)
        if limiters:
            limit_rates(loop, limiters)
        result = loop.run()
    except Exception as exc:  # noqa: BLE001 - one task's bug is recorded; the batch goes on
        message = str(exc) if isinstance(exc, HarnessError) else f"{type(exc).__name__}: {exc}"
        return TaskRecord(
            name=task.name,
            status="error",
            stop_reason=StopReason.ERROR.value,
            message=message,
            seconds=round(time.monotonic() - started, 3),
            starts=run.starts,
            runner=task.runner,
        )
    seconds = time.monotonic() - started
    return record_of(task, run, result, seconds, runner=runner_name(loop.settings.agent))


def placed_task(task: BatchTask, place: Place) -> BatchTask:
    """The task with its paths where ``place`` has them (a scripted model's file too): in a Ray
    worker's copy of what was shipped; unchanged in place."""
    if place.copy is None:
        return task
    if task.model is not None and task.model.startswith(SCRIPTED):
        model = SCRIPTED + str(place.path(task.model.removeprefix(SCRIPTED)))
        task = task.model_copy(update={"model": model})
    return task.moved(place.path)


def limit_rates(loop: OuterLoop, limiters: Mapping[str, Limiter]) -> None:
    """Send the loop's author and critic calls through the limiter of their model, if any."""

    def limited(model: Model) -> Model:
        limiter = limiters.get(model.name)
        return model if limiter is None else RateLimitedModel(model, limiter)

    settings = loop.settings
    agent = settings.agent.with_model(limited(settings.agent.model))
    critic = settings.critic
    if critic is not None:
        critic = critic.with_models([limited(m) for m in critic.models], critic.events)
    loop.settings = settings.model_copy(update={"agent": agent, "critic": critic})


def record_of(
    task: BatchTask | str,
    run: TaskRun | None,
    result: RunResult,
    seconds: float,
    *,
    runner: str | None = None,
) -> TaskRecord:
    """How a task's (or an attempt's: ``task`` is then its name) loop ended, as a record;
    ``runner``: what ran its sessions."""
    status: Status = "passed" if result.passed else ENDINGS.get(result.stop_reason, "escalated")
    verdict = result.rounds[-1].verdict if result.rounds else None
    return TaskRecord(
        name=task if isinstance(task, str) else task.name,
        status=status,
        stop_reason=result.stop_reason.value,
        message=result.message,
        rounds=result.iterations,
        score=verdict.score if verdict is not None else None,
        prompt_tokens=result.usage.prompt_tokens,
        completion_tokens=result.usage.completion_tokens,
        cost_usd=result.usage.cost_usd,
        seconds=round(seconds, 3),
        branch=result.branch,
        run_id=result.run_id,
        starts=run.starts if run is not None else 1,
        unsandboxed=result.unsandboxed,
        runner=runner,
    )
