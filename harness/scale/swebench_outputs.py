"""What a benchmark run leaves, written anew from the batch's records after every run.

For each runner's side of the benchmark (one side without ``--runner`` or with one runner; one
per runner with several, in ``<out>/<runner>/``): ``preds.jsonl`` (one line per instance whose
first attempt ended, in the official record form, ``model_name_or_path`` naming the runner and
the model), ``results.jsonl`` (one per attempt), ``bench.json`` (resolve rate, cost, rounds,
pass@k) and ``trajs/<instance>[.<n>].traj`` (each attempt's trajectory in SWE-agent's form).
With several runners, ``<out>/bench.json`` holds them side by side.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.assemble.build import run_folder
from harness.core import nofollow
from harness.observe.events import EVENTS_FILE
from harness.observe.trajectory import TRAJECTORY_FILE, Trajectory
from harness.observe.trajectory_export import swe_agent_traj
from harness.scale.batch_task import TaskRecord, read_record, runner_task_name
from harness.scale.side_by_side import UNNAMED, compare
from harness.scale.swebench_instance import Instance
from harness.scale.swebench_summary import BenchSummary, InstanceResult, SideBySide, summarise
from harness.workspace.git_cmd import git

PREDICTIONS = "preds.jsonl"
RESULTS = "results.jsonl"
SUMMARY = "bench.json"
TRAJS = "trajs"
"""The folder of the attempts' trajectories in SWE-agent's form, ``<task name>.traj``."""


@dataclass(frozen=True)
class Side:
    """One runner's share of a benchmark: its tasks' names and where its outputs go.

    ``runner`` None: no ``--runner`` (the loop's own, the harness's agent). ``several``: more
    than one runner, so each side's tasks are named ``<instance>.<runner>`` and its outputs go
    to ``<out>/<runner>/``; else the tasks are the instances' ids and the outputs ``<out>/``.
    """

    runner: str | None = None
    several: bool = False

    def task(self, instance_id: str, attempt: int = 1) -> str:
        """The batch task of an instance's attempt on this side (as
        :func:`~harness.scale.batch_task.per_runner` names it)."""
        several = self.several and self.runner is not None
        base = runner_task_name(instance_id, str(self.runner)) if several else instance_id
        return attempt_name(base, attempt)

    def folder(self, out: Path) -> Path:
        return out / self.runner if self.several and self.runner else out

    def model_name(self, model: str) -> str:
        """``model_name_or_path``: the model, with the runner when one was chosen
        (``codex+gpt-5``)."""
        return model if self.runner is None else f"{self.runner}+{model}"


def attempt_name(instance_id: str, attempt: int) -> str:
    """The batch task of an instance's attempt: its id for the first, ``<id>.<n>`` after."""
    return instance_id if attempt == 1 else f"{instance_id}.{attempt}"


def instance_folder(out: Path, instance: Instance) -> Path:
    return out / "instances" / instance.instance_id


def write_side_by_side(
    instances: Sequence[Instance], model: str, out: Path, sides: Sequence[Side], *, attempts: int
) -> SideBySide:
    """Each side's outputs in its folder, then ``<out>/bench.json``: the runners compared."""
    summaries = [
        write_outputs(instances, model, out, side=side, attempts=attempts) for side in sides
    ]
    results = [
        InstanceResult.model_validate_json(line)
        for side in sides
        for line in (side.folder(out) / RESULTS).read_text(encoding="utf-8").splitlines()
    ]
    order = [side.runner or UNNAMED for side in sides]
    both = SideBySide(
        model=model,
        instances=len(instances),
        attempts=attempts,
        runners=compare(results, order),
        summaries=summaries,
    )
    nofollow.write_atomic(out / SUMMARY, both.model_dump_json(indent=2).encode("utf-8"))
    return both


def write_outputs(
    instances: Sequence[Instance],
    model: str,
    out: Path,
    *,
    side: Side = Side(),
    attempts: int = 1,
) -> BenchSummary:
    """``preds.jsonl`` (first attempts), ``results.jsonl`` (every attempt that ended) and
    ``bench.json`` of one side, from the batch's records."""
    predictions: list[str] = []
    results: list[InstanceResult] = []
    runner = side.runner or UNNAMED
    folder = side.folder(out)
    name_or_path = side.model_name(model)
    for instance in instances:
        for attempt in range(1, attempts + 1):
            record = read_record(out / "batch", side.task(instance.instance_id, attempt))
            if record is None or not record.ended:
                continue
            results.append(result_of(instance, attempt, record, out, runner))
            patch = model_patch(instance, record, out)
            traj = folder / TRAJS / f"{attempt_name(instance.instance_id, attempt)}.traj"
            write_traj(traj, out, instance, record, patch)
            if attempt == 1:
                line = {"instance_id": instance.instance_id, "model_name_or_path": name_or_path}
                predictions.append(json.dumps({**line, "model_patch": patch}))
    write_lines(folder / PREDICTIONS, predictions)
    write_lines(folder / RESULTS, [r.model_dump_json() for r in results])
    ids = [i.instance_id for i in instances]
    summary = summarise(name_or_path, ids, attempts, results, runner=runner)
    nofollow.write_atomic(folder / SUMMARY, summary.model_dump_json(indent=2).encode("utf-8"))
    return summary


def write_lines(path: Path, lines: list[str]) -> None:
    nofollow.write_atomic(path, "".join(f"{line}\n" for line in lines).encode("utf-8"))


def result_of(
    instance: Instance, attempt: int, record: TaskRecord, out: Path, runner: str
) -> InstanceResult:
    run = attempt_run(out, instance, record)
    events = run / EVENTS_FILE if run is not None else None
    return InstanceResult(
        instance_id=instance.instance_id,
        attempt=attempt,
        runner=runner,
        resolved=record.status == "passed",
        status=record.status,
        stop_reason=record.stop_reason,
        rounds=record.rounds,
        tokens=record.tokens,
        cost_usd=record.cost_usd,
        seconds=record.seconds,
        branch=record.branch,
        trajectory=str(events) if events is not None and events.is_file() else None,
    )


def attempt_run(out: Path, instance: Instance, record: TaskRecord) -> Path | None:
    """The folder of the attempt's run; None when the attempt never started one."""
    return run_folder(instance_folder(out, instance), record.run_id) if record.run_id else None


def write_traj(path: Path, out: Path, instance: Instance, record: TaskRecord, patch: str) -> None:
    """``path``: the trajectory of the attempt ``record`` tells of, in SWE-agent's form."""
    run = attempt_run(out, instance, record)
    if run is None or not (run / TRAJECTORY_FILE).is_file():
        return
    traj = swe_agent_traj(
        Trajectory.load(run), submission=patch, exit_status=record.stop_reason or record.status
    )
    nofollow.write_atomic(path, json.dumps(traj, indent=1).encode("utf-8"))


def model_patch(instance: Instance, record: TaskRecord, out: Path) -> str:
    """What the agent changed: the diff from the base to its run branch's last commit."""
    if not record.branch:
        return ""
    repo = instance_folder(out, instance) / "repo"
    return git(repo, "diff", "--binary", instance.base_commit, record.branch)
