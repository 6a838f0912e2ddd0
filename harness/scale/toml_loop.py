"""A batch task that names a ``loop.toml``: the loop it declares, with the task's overrides."""

from __future__ import annotations

from harness.cli.config import LoopConfig, load_config
from harness.cli.runner import Overrides, build_loop, mcp_servers
from harness.core.errors import ConfigError
from harness.observe.events import EVENTS_FILE, EventLog
from harness.observe.run_summary import RUNS_DIR
from harness.outer.loop import OuterLoop
from harness.scale.batch_task import BatchTask
from harness.scale.task_run import TaskRun


def loop_from_toml(task: BatchTask, run: TaskRun) -> OuterLoop:
    """The loop ``task.loop`` declares, with the task's overrides, its own name and progress.

    The loop is named after the task (so its branch is ``harness/<task>-<id>``), its progress
    file is the batch's, and its events go to ``.harness/runs/<run id>/`` beside the loop.toml,
    so ``harness report <run id>`` works as for a single run. Its ``[[mcp]]`` servers are the
    loop's own: started when the task's loop runs and stopped when it ends.
    """
    if task.loop is None:
        raise ConfigError(f"task {task.name}: field 'loop': required to run a loop.toml task")
    config, root = load_config(task.loop)
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
            run_id=run.run_id, redact=redactor.redact_text, mcp=mcp_servers(config, root),
        )  # fmt: skip
    except ConfigError as exc:
        raise ConfigError(f"{task.loop}: {exc}") from exc
