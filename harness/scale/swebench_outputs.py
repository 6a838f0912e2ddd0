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
        prepared = instance_folder(out, instance)
        for attempt in range(1, attempts + 1):
            record = read_record(out / "batch", side.task(instance.instance_id, attempt))
            if record is None or not record.ended:
                continue
            run = run_folder(prepared, record.run_id) if record.run_id else None  # None: no run
            results.append(result_of(instance, attempt, record, run, runner))
            patch = ""  # what the agent changed: the diff from the base to its branch's last commit
            if record.branch:
                base = instance.base_commit
                patch = git(prepared / "repo", "diff", "--binary", base, record.branch)
            if run is not None and (run / TRAJECTORY_FILE).is_file():  # its SWE-agent form
                status = record.stop_reason or record.status
                traj = swe_agent_traj(Trajectory.load(run), submission=patch, exit_status=status)
                name = f"{attempt_name(instance.instance_id, attempt)}.traj"
                nofollow.write_atomic(folder / TRAJS / name, json.dumps(traj, indent=1).encode())
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
    instance: Instance, attempt: int, record: TaskRecord, run: Path | None, runner: str
) -> InstanceResult:
    events = run / EVENTS_FILE if run is not None else None
    return InstanceResult(
        **record.model_dump(include={"status", "stop_reason", "rounds", "cost_usd", "seconds"}),
        instance_id=instance.instance_id,
        attempt=attempt,
        runner=runner,
        resolved=record.resolved,
        tokens=record.tokens,
        branch=record.branch,
        trajectory=str(events) if events is not None and events.is_file() else None,
    )
