"""Parallel efficiency of a local batch: the same 16 tasks at 1 worker, then at 8.

Each task is a full outer loop (a command gate, a progress file, and with ``--isolation
worktree`` its own git worktree and branch on one shared repository; with ``none`` its own
folder) whose SCRIPTED MODEL SLEEPS ``--sleep`` seconds per call, two calls a loop, standing in
for a model's latency. Git isolation costs about a dozen git processes a loop: CPU work that
eight loops share with everything else on a small machine, so it shows in the figure. Efficiency is
``T(1 worker) / (workers x T(workers))``: 100 % means the pool adds no overhead beyond the
tasks' own work. The script also checks that the summary's totals equal the sum of the tasks'
usage.

Run from the repository root: ``python -m bench.batch_scaling [--tasks 16] [--workers 8]``.
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from pathlib import Path

from harness.agent.agent import Agent
from harness.models.base import ToolCall
from harness.models.scripted import ScriptedModel
from harness.outer.loop import OuterLoop
from harness.scale.batch import Batch
from harness.scale.batch_summary import BatchSummary
from harness.scale.batch_task import BatchTask
from harness.scale.task_run import TaskRun
from harness.verify.gates import CommandGate


def _repo(path: Path) -> Path:
    path.mkdir(parents=True)
    for args in (
        ["init", "-q", "-b", "main"],
        ["config", "user.email", "bench@example.com"],
        ["config", "user.name", "Bench"],
    ):
        subprocess.run(["git", *args], cwd=path, check=True)
    (path / "README.md").write_text("bench\n")
    subprocess.run(["git", "add", "-A"], cwd=path, check=True)
    subprocess.run(["git", "commit", "-qm", "initial"], cwd=path, check=True)
    return path


def _loops(repo: Path, sleep: float, isolation: str):
    def slow(entry: object):
        def reply(messages: object, tools: object) -> object:
            time.sleep(sleep)
            return entry

        return reply

    def loop_for(task: BatchTask, run: TaskRun) -> OuterLoop:
        workspace = repo if isolation == "worktree" else repo.parent / task.name
        workspace.mkdir(exist_ok=True)
        model = ScriptedModel(
            [slow(ToolCall("write_file", {"path": "out.txt", "content": "yes"})), slow("done")]
        )
        return OuterLoop(
            "out.txt says yes", Agent(model), gates=[CommandGate("grep -qx yes out.txt")],
            workspace=workspace, progress=run.progress, max_iterations=1,
            isolation="auto" if isolation == "worktree" else "none",
            run_id=run.run_id, name=task.name,
        )  # fmt: skip

    return loop_for


def _batch(
    folder: Path, tasks: int, workers: int, sleep: float, isolation: str
) -> tuple[float, BatchSummary]:
    repo = _repo(folder / "repo")
    batch = Batch(
        [{"name": f"task-{i}"} for i in range(tasks)], _loops(repo, sleep, isolation),
        workers=workers, out=folder / "out",
    )  # fmt: skip
    started = time.perf_counter()
    summary = batch.run()
    return time.perf_counter() - started, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=16)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--sleep", type=float, default=0.5, help="seconds per model call")
    parser.add_argument("--isolation", choices=("worktree", "none"), default="worktree")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        serial, one = _batch(Path(tmp) / "serial", args.tasks, 1, args.sleep, args.isolation)
        parallel, many = _batch(
            Path(tmp) / "parallel", args.tasks, args.workers, args.sleep, args.isolation
        )
    for summary in (one, many):
        assert summary.counts == {"passed": args.tasks}, summary.counts
        assert summary.totals.tokens == sum(t.tokens for t in summary.tasks)
        assert summary.totals.cost_usd == sum(t.cost_usd for t in summary.tasks)
    loop_times = sorted(t.seconds for t in one.tasks)
    print(
        f"{args.tasks} tasks, model sleeps {args.sleep}s per call (2 calls a loop), "
        f"isolation {args.isolation}"
    )
    print(f"median loop time alone:       {loop_times[len(loop_times) // 2]:.2f} s")
    print(f"1 worker:                     {serial:.2f} s")
    print(f"{args.workers} workers:                    {parallel:.2f} s")
    print(f"speed-up:                     {serial / parallel:.2f}x")
    print(f"parallel efficiency:          {serial / (args.workers * parallel):.0%}")
    print(f"summary totals = sum of tasks: {many.totals.tokens} tokens (checked)")


if __name__ == "__main__":
    main()
