"""One task of a batch, as a line of ``TASKS.jsonl`` gives it, and the record of how it ended.

Every line is validated with pydantic; an error names the file, the line and the field. Relative
paths in a line (``loop``, ``workspace``) start at the folder that holds the task file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.agent.config import RunnerName
from harness.core import nofollow
from harness.core.budget import Budget
from harness.core.errors import ConfigError
from harness.core.usage import Usage
from harness.core.validation import format_validation_error, json_lines, read_utf8
from harness.engine.bounds import Iterations
from harness.scale import record_ledger

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
MAX_NAME = 64
"""The longest task name :data:`NAME_PATTERN` allows."""


class BatchTask(BaseModel):
    """``{"name": ..., "loop": "path/to/loop.toml"}`` and optional overrides of that file."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    name: str = Field(pattern=NAME_PATTERN)
    loop: str | None = None
    goal: str | None = Field(None, min_length=1)
    workspace: str | None = None
    model: str | None = None
    runner: RunnerName | None = None  # what runs the task's sessions, over [agent] runner
    max_iterations: Iterations | None = None
    budget: Budget | None = None  # the task's own ceilings

    def moved(self, where: Callable[[str], Path]) -> BatchTask:
        """The task with its ``loop`` and ``workspace`` (when given) at ``where(path)``."""
        paths = {"loop": self.loop, "workspace": self.workspace}
        return self.model_copy(update={k: str(where(v)) for k, v in paths.items() if v is not None})


Status = Literal["running", "passed", "escalated", "error", "interrupted"]
ENDED: tuple[Status, ...] = ("passed", "escalated", "error")
"""A task with one of these statuses has ended: a re-run of the batch skips it."""


class TaskRecord(BaseModel):
    """How one task stands; written atomically to ``<out>/tasks/<name>/record.json``."""

    model_config = ConfigDict(extra="forbid")

    name: str
    status: Status
    stop_reason: str | None = None
    message: str = ""
    rounds: int = 0
    score: float | None = None
    """The critic's score of the last round, if a critic judged it."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0
    branch: str | None = None
    run_id: str | None = None
    starts: int = 1
    """How many times the task was started (more than one after an interrupted batch)."""
    unsandboxed: str | None = None
    """Why its commands ran without a sandbox, when they did."""
    runner: str | None = None
    """What ran its rounds' sessions (``[agent] runner``); None in records from before runners
    were recorded."""
    others_tests_passed: int | None = None
    """An attempt's votes: how many of the other attempts' reproduction tests it passes ..."""
    others_tests: int | None = None
    """... of how many (None: no other attempt's reproduction tests judged it)."""

    @property
    def resolved(self) -> bool:
        """Whether it passed (the side-by-side comparison's word)."""
        return self.status == "passed"

    @property
    def ended(self) -> bool:
        return self.status in ENDED

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def usage(self) -> Usage:
        return Usage(self.prompt_tokens, self.completion_tokens, self.cost_usd)

    def save(self, folder: Path) -> Path:
        """Write the record (no link followed) and keep its digest out of the tasks' reach.

        The digest is kept first: a batch killed between the two writes leaves the earlier
        record untrusted, so the task runs again, never a record written but not believed."""
        data = self.model_dump_json(indent=2).encode("utf-8")
        record_ledger.remember(folder, self.name, data)
        return nofollow.write_atomic(record_path(folder, self.name), data)


def record_path(out: Path, name: str) -> Path:
    return out / "tasks" / name / "record.json"


RECORD_LIMIT = 1024 * 1024
"""The most a task's record may hold when read (1 MB)."""


def read_record(out: Path, name: str) -> TaskRecord | None:
    """The task's record, or None if it was never started.

    A record that is not the one the batch wrote (:mod:`harness.scale.record_ledger`), changed
    by a task's agent say, is not believed: it comes back ``interrupted``, so the task runs
    again (its loop resumes from its progress and checks any pass it claims).
    """
    path = record_path(out, name)
    try:
        data = nofollow.read_bytes(path, limit=RECORD_LIMIT)
    except FileNotFoundError:
        return None
    if not record_ledger.trusted(out, name, data):
        try:  # the starts it claims, when it can be read (only a count of runs)
            starts = TaskRecord.model_validate_json(data).starts
        except ValidationError:
            starts = 1
        return TaskRecord(
            name=name,
            status="interrupted",
            message=f"{path} is not the record the batch wrote; not trusted, run again",
            starts=starts,
        )
    try:
        return TaskRecord.model_validate_json(data)  # not UTF-8: a named error
    except ValidationError as exc:
        raise ConfigError(format_validation_error(path, exc)) from None


def load_tasks(path: str | Path) -> list[BatchTask]:
    """The tasks of a JSONL file, one per non-empty line, names unique."""
    path = Path(path)
    text = read_utf8(path, "the task file")
    base = path.resolve().parent
    tasks: list[BatchTask] = []
    for where, data in json_lines(path, text):
        if not isinstance(data, dict):
            raise ConfigError(f"{where}: expected a JSON object with a name and a loop")
        try:
            task = BatchTask.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(format_validation_error(where, exc)) from None
        tasks.append(task.moved(lambda value: base / value))
    check_names(tasks, source=str(path))
    return tasks


def per_runner(tasks: Sequence[BatchTask], runners: Sequence[RunnerName]) -> list[BatchTask]:
    """Each task once per runner of ``runners``, side by side under the same loop and gates.

    A task whose line names its own ``runner`` runs once, with it. With one runner, the others
    take it under their own names; with several, each is run once per runner and named
    ``<name>.<runner>``.
    """
    several = len(runners) > 1
    expanded: list[BatchTask] = []
    for task in tasks:
        if task.runner is not None or not runners:
            expanded.append(task)
            continue
        for runner in runners:
            name = runner_task_name(task.name, runner) if several else task.name
            expanded.append(task.model_copy(update={"runner": runner, "name": name}))
    return expanded


def runner_task_name(name: str, runner: str) -> str:
    """``<name>.<runner>``: a task's name when several runners each run it; a
    :class:`ConfigError` naming the task when that is longer than :data:`MAX_NAME`."""
    named = f"{name}.{runner}"
    if len(named) > MAX_NAME:
        raise ConfigError(
            f"task {name!r}: too long to be named per runner ({named!r}: at most "
            f"{MAX_NAME} characters)"
        )
    return named


def check_names(tasks: Sequence[BatchTask], *, source: str = "tasks") -> None:
    if not tasks:
        raise ConfigError(f"{source}: no tasks given")
    seen: set[str] = set()
    for task in tasks:
        if task.name in seen:
            raise ConfigError(
                f"{source}: task name {task.name!r} is used twice; names must be unique"
            )
        seen.add(task.name)
