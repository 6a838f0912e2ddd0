"""A batch task that names a ``loop.toml``: the loop it declares, with the task's overrides."""

from __future__ import annotations

from typing import Any

from harness.assemble.launch import recorded_loop
from harness.assemble.named_models import Overrides
from harness.core.errors import ConfigError
from harness.outer.loop import OuterLoop
from harness.scale.batch_task import BatchTask
from harness.scale.task_run import TaskRun
from harness.spec import LoopSpec


def loop_from_toml(task: BatchTask, run: TaskRun) -> OuterLoop:
    """The loop ``task.loop`` declares, with the task's overrides, its own name and progress.

    The loop is named after the task (so its branch is ``harness/<task>.<loop>.<id>``), its progress
    file is the batch's, and its events go to ``.harness/runs/<run id>/`` beside the loop.toml,
    so ``harness report <run id>`` works as for a single run. Its ``[[mcp]]`` servers are the
    loop's own: started when the task's loop runs and stopped when it ends.
    """
    if task.loop is None:
        raise ConfigError(f"task {task.name}: field 'loop': required to run a loop.toml task")
    spec = LoopSpec.from_toml(task.loop)
    if task.runner is not None:  # checked with the file's other fields: command needs one
        spec = spec.with_runner(task.runner)
    changes: dict[str, Any] = {"name": task.name, "progress": str(run.progress.resolve())}
    for key in ("goal", "workspace", "max_iterations", "budget"):
        if getattr(task, key) is not None:
            changes[key] = getattr(task, key)
    return recorded_loop(
        spec.with_changes(**changes), overrides=Overrides(model=task.model), run_id=run.run_id
    )
