"""The Ray backend for real: a local Ray cluster, real temp git repositories, a scripted model.

Nothing is shared through the filesystem: each worker gets the repository as a git bundle and
hands back the run's branch as a bundle plus its run folder. One Ray start for the module.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cli.batch import loop_from_toml
from harness.scale.batch import Batch
from harness.scale.batch_task import BatchTask
from tests.cli.test_cli import write_loop
from tests.conftest import git, make_repo
from tests.scale.loop_projects import loop_project

ray = pytest.importorskip("ray", reason="the Ray backend needs the ray extra")

pytestmark = pytest.mark.slow

UNSANDBOXED = '[sandbox]\nbackend = "none"\n'
"""The crash gate must reach the Ray worker that runs the loop, to kill it."""


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """The address of a local Ray cluster this test process is connected to."""
    context = ray.init(
        num_cpus=4, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1"
    )
    yield context.address_info["gcs_address"]
    ray.shutdown()


def test_a_ray_batch_brings_every_branch_and_report_back_and_retries_a_killed_worker(
    tmp_path: Path, cluster: str
) -> None:
    marker = tmp_path / "killed-once"
    # The first time, the gate kills (SIGKILL) the Ray worker process running the loop: its
    # parent. Were the kill to fail, the gate would pass at once and nothing would be retried.
    crash = (
        f"if test -f {marker}; then touch {marker}.retried; "
        f"else touch {marker}; kill -9 $PPID; fi; "
        "grep -qx yes out.txt"
    )
    repos = {
        "one": loop_project(tmp_path / "one", "yes", "grep -qx yes out.txt"),
        "two": loop_project(tmp_path / "two", "yes", "grep -qx yes out.txt"),
        "three": loop_project(tmp_path / "three", "no", "grep -qx yes out.txt"),
        "crash": loop_project(tmp_path / "crash", "yes", crash, extra=UNSANDBOXED),
    }
    tasks = [BatchTask(name=name, loop=str(repo / "loop.toml")) for name, repo in repos.items()]
    summary = Batch(tasks, loop_from_toml, workers=4, backend="ray", out=tmp_path / "out").run()

    by_name = {r.name: r for r in summary.tasks}
    assert {n: r.status for n, r in by_name.items()} == {
        "one": "passed", "two": "passed", "three": "escalated", "crash": "passed",
    }  # fmt: skip
    # The worker was killed mid-run, so Ray ran the task again (from the shipped repository):
    assert marker.exists()
    assert Path(f"{marker}.retried").exists()
    for name, repo in repos.items():
        record = by_name[name]
        assert record.branch is not None
        # The branch came back through a bundle: the worker's clone is gone.
        assert git(repo, "show", f"{record.branch}:out.txt") == ("no" if name == "three" else "yes")
        events = repo / ".harness" / "runs" / str(record.run_id) / "events.jsonl"
        kinds = [json.loads(line)["kind"] for line in events.read_text().splitlines()]
        assert kinds.count("run_end") == 1
        assert git(repo, "worktree", "list").count("\n") == 0  # no worktree of the worker's here
    progress = tmp_path / "out" / "tasks" / "three" / "progress.md"
    assert progress.is_file()
    assert (tmp_path / "out" / "tasks" / "three" / "progress.escalation.md").is_file()
    assert summary.totals.tokens == sum(r.tokens for r in summary.tasks) > 0


def test_a_task_outside_a_git_repository_is_an_error_naming_it(
    tmp_path: Path, cluster: str
) -> None:
    folder = tmp_path / "plain"
    write_loop(folder, 'goal = "x"\n[[gates]]\ntype = "command"\ncmd = "true"\n')
    with pytest.raises(Exception, match="not in one"):
        Batch([BatchTask(name="plain", loop=str(folder / "loop.toml"))], loop_from_toml,
              backend="ray", out=tmp_path / "out").run()  # fmt: skip


def test_a_rate_limit_is_shared_by_every_ray_worker(tmp_path: Path, cluster: str) -> None:
    from datetime import datetime

    repos = {
        f"r{i}": loop_project(tmp_path / f"r{i}", "yes", "grep -qx yes out.txt") for i in range(4)
    }
    tasks = [BatchTask(name=name, loop=str(repo / "loop.toml")) for name, repo in repos.items()]
    started = time.time()
    summary = Batch(
        tasks, loop_from_toml, workers=4, backend="ray", out=tmp_path / "out",
        rate_limits={"scripted:script.json": 120},  # one call every 0.5 s, cluster-wide
    ).run()  # fmt: skip
    assert summary.counts == {"passed": 4}
    calls = sorted(
        datetime.fromisoformat(event["ts"].replace("Z", "+00:00")).timestamp()
        for name, repo in repos.items()
        for log in (repo / ".harness" / "runs").glob("*/events.jsonl")
        for event in map(json.loads, log.read_text().splitlines())
        if event["kind"] == "model_call"
    )
    assert len(calls) == 8
    # Eight calls, seven shared intervals after the first turn, which came after `started`:
    # the last call cannot have begun sooner, however late any event was written.
    assert calls[-1] - started >= 7 * 0.5
    # Each event is written a little after its call began, by a busy worker a few tenths of a
    # second later, and not equally; so the first-to-last span is held to 70% of the seven
    # intervals. Four limits of their own (one per worker) would span about one interval.
    assert calls[-1] - calls[0] >= 0.7 * 7 * 0.5


def test_harness_batch_joins_an_existing_cluster_by_address(tmp_path: Path, cluster: str) -> None:
    from tests.cli.test_cli import harness

    repo = loop_project(tmp_path / "repo", "yes", "grep -qx yes out.txt")
    (tmp_path / "tasks.jsonl").write_text(
        json.dumps({"name": "joined", "loop": "repo/loop.toml"}) + "\n"
    )
    result = harness(
        "batch", "tasks.jsonl", "--backend", "ray", "--ray-address", cluster, "--out", "out",
        "--quiet", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "on 4 ray workers" in result.stdout
    (record,) = json.loads((tmp_path / "out" / "summary.json").read_text())["tasks"]
    assert record["status"] == "passed"
    assert git(repo, "show", f"{record['branch']}:out.txt") == "yes"
    assert "Started a local Ray instance" not in result.stderr  # it joined ours


def test_a_fleet_with_backend_ray_runs_its_subtasks_on_ray_workers(
    tmp_path: Path, cluster: str
) -> None:
    """``[fleet] backend = "ray"``: each subtask's loop runs on a worker in a copy of the
    repository; its branch, run folder and progress file come back, and the evaluation and the
    synthesis read them here."""
    from tests.cli.test_cli import harness

    project = loop_project(tmp_path / "project", "yes", "grep -qx yes out.txt", extra=f"""
        [fleet]
        subtasks = ["look in the docs", "look in the code"]
        model = "scripted:synth.json"
        backend = "ray"
        ray_address = "{cluster}"
        [[fleet.evaluate]]
        type = "command"
        cmd = "grep -qx yes out.txt"
        """)  # fmt: skip
    (project / "synth.json").write_text(json.dumps(["Both subtasks say yes."]))
    git(project, "add", "-A")
    git(project, "commit", "-qm", "fleet")

    result = harness("run", cwd=project)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Both subtasks say yes."
    lines = sorted(line for line in result.stderr.splitlines() if line.startswith("task-"))
    assert [line.split(":")[0] for line in lines] == ["task-1", "task-2"]
    for number, line in enumerate(lines, start=1):
        assert f"PASSED, kept, branch harness/loop-task-{number}." in line
        branch = line.rsplit("branch ", 1)[1]
        assert git(project, "show", f"{branch}:out.txt") == "yes"  # fetched from a bundle
        progress = project / "progress" / f"loop-task-{number}.md"
        assert "passed" in progress.read_text().lower()  # came back from the worker
    starts = [
        json.loads(line)
        for log in (project / ".harness" / "runs").glob("*/events.jsonl")
        for line in log.read_text().splitlines()
        if json.loads(line)["kind"] == "run_start"
    ]
    assert len(starts) == 2
    for start in starts:  # each loop worked in a worker's copy, not in the project
        assert "harness-ray-" in start["workspace"]
        assert not start["workspace"].startswith(str(project))
    assert git(project, "worktree", "list").count("\n") == 0
    assert "Started a local Ray instance" not in result.stderr  # it joined ours


def test_a_python_fleet_on_ray_calls_loop_for_in_a_workers_copy(
    tmp_path: Path, cluster: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Fleet(..., backend="ray")``: ``loop_for`` runs on a worker with the working directory
    at the copy of this one, so its relative paths name the copy's files; the branch and the
    progress file placed with ``Place.current().progress`` come back."""
    import os

    from harness import Agent, CommandGate, OuterLoop, ScriptedModel, ToolCall
    from harness.scale.fleet import Fleet, Subtask
    from harness.scale.job import Place

    project = make_repo(tmp_path / "project", {"README.md": "hi\n"})
    seen = tmp_path / "seen"
    seen.mkdir()
    driver = os.getpid()

    def loop_for(subtask: Subtask) -> OuterLoop:
        def answer(messages: object, tools: object) -> ToolCall:  # runs where the loop runs
            (seen / subtask.name).write_text(f"{os.getpid() != driver} {Path.cwd()}")
            return ToolCall("write_file", {"path": "out.txt", "content": subtask.goal})

        return OuterLoop(
            subtask.goal, Agent(ScriptedModel([answer, "done"])),
            gates=[CommandGate("grep -qx yes out.txt")], workspace=".", max_iterations=1,
            progress=Place.current().progress(Path(f"progress/{subtask.name}.md")),
            name=subtask.name,
        )  # fmt: skip

    monkeypatch.chdir(project)
    subtasks = [Subtask(name="good", goal="yes"), Subtask(name="bad", goal="no")]
    result = Fleet("answer", loop_for, subtasks=subtasks, backend="ray", ray_address=cluster).run()

    assert [(o.subtask.name, o.kept, o.error) for o in result.outcomes] == [
        ("good", True, None), ("bad", False, None),
    ]  # fmt: skip
    for outcome, content in zip(result.outcomes, ("yes", "no"), strict=True):
        assert outcome.result is not None
        assert outcome.result.branch is not None
        assert git(project, "show", f"{outcome.result.branch}:out.txt") == content
        on_worker, cwd = (seen / outcome.subtask.name).read_text().split(" ", 1)
        assert on_worker == "True"
        assert "harness-ray-" in cwd
        assert not cwd.startswith(str(project))
    assert (project / "progress" / "good.md").is_file()  # came back beside where it was asked
    bad = result.outcomes[1].result
    assert bad is not None
    assert bad.escalation == project / "progress" / "bad.escalation.md"
    assert bad.escalation.is_file()
    assert "out.txt" in result.kept[0].artifacts  # read here, from the fetched branch
    assert "yes" in result.kept[0].artifacts


def test_best_of_n_on_ray_brings_every_attempts_branch_back(
    tmp_path: Path, cluster: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness import Agent, CommandGate, OuterLoop, ScriptedModel, ToolCall
    from harness.scale.best_of import BestOf

    project = make_repo(tmp_path / "project", {"README.md": "hi\n"})

    def loop_for(number: int) -> OuterLoop:
        answer = "yes" if number == 2 else "no"
        model = ScriptedModel(
            [ToolCall("write_file", {"path": "out.txt", "content": answer}), "done"]
        )
        return OuterLoop(
            "out.txt says yes", Agent(model), gates=[CommandGate("grep -qx yes out.txt")],
            workspace=".", max_iterations=1, name=f"attempt-{number}",
        )  # fmt: skip

    monkeypatch.chdir(project)
    result = BestOf(loop_for, attempts=2, backend="ray", ray_address=cluster).run()

    assert [a.passed for a in result.attempts] == [False, True]
    assert result.winner is result.attempts[1]
    for attempt, content in zip(result.attempts, ("no", "yes"), strict=True):
        assert attempt.result is not None
        assert attempt.result.worktree is None  # it stayed on the worker
        assert git(project, "show", f"{attempt.result.branch}:out.txt") == content
    assert git(project, "status", "--porcelain") == ""  # the project itself untouched


def test_a_pool_ships_a_repository_once_as_it_was_at_its_first_job(
    tmp_path: Path, cluster: str
) -> None:
    """Best-of's attempts, a fleet's subtasks, a benchmark instance's attempts: one bundle of
    their repository, made when the first of them was submitted; another repository has its own."""
    from harness.scale.batch_task import TaskRecord
    from harness.scale.job import Job, Place
    from harness.scale.ray_backend import RayPool

    def reads(name: str, repo: Path) -> Job[TaskRecord]:
        def run(place: Place) -> TaskRecord:
            said = (place.path(repo) / "said.txt").read_text()
            return TaskRecord(name=name, status="passed", message=f"{os.getpid()} {said}")

        return Job(name, run, workspace=str(repo))

    one = make_repo(tmp_path / "one", {"said.txt": "first\n"})
    other = make_repo(tmp_path / "other", {"said.txt": "other\n"})
    pool = RayPool(address=cluster)
    try:
        early = pool.submit(reads("early", one))
        (one / "said.txt").write_text("second\n")
        git(one, "commit", "-qam", "second")
        late = pool.submit(reads("late", one))
        apart = pool.submit(reads("apart", other))
        said = [f.result(timeout=120).message.split(" ", 1) for f in (early, late, apart)]
    finally:
        pool.close()

    assert [text for _, text in said] == ["first\n", "first\n", "other\n"]
    assert all(int(pid) != os.getpid() for pid, _ in said)  # on Ray workers
