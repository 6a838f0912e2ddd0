"""The Ray backend for real: a local Ray cluster, real temp git repositories, a scripted model.

Nothing is shared through the filesystem: each worker gets the repository as a git bundle and
hands back the run's branch as a bundle plus its run folder. One Ray start for the module.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cli.batch import loop_from_toml
from harness.scale.batch import Batch
from harness.scale.batch_task import BatchTask
from tests.cli.test_cli import write_loop
from tests.conftest import git, make_repo

ray = pytest.importorskip("ray", reason="the Ray backend needs the ray extra")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1")
    yield
    ray.shutdown()


def _repo(folder: Path, answer: str, gate: str) -> Path:
    """A repository whose loop.toml (and scripted model) travel inside it."""
    repo = make_repo(folder, {"README.md": "hi\n"})
    (repo / "script.json").write_text(
        json.dumps(
            [{"name": "write_file", "arguments": {"path": "out.txt", "content": answer}}, "done"]
        )
    )
    write_loop(
        repo,
        f"""\
        goal = "out.txt says yes"
        model = "scripted:script.json"
        max_iterations = 1
        [critic]
        enabled = false
        [[gates]]
        type = "command"
        name = "says yes"
        cmd = '''{gate}'''
        """,
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "loop")
    return repo


def test_a_ray_batch_brings_every_branch_and_report_back_and_retries_a_killed_worker(
    tmp_path: Path, cluster: None
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
        "one": _repo(tmp_path / "one", "yes", "grep -qx yes out.txt"),
        "two": _repo(tmp_path / "two", "yes", "grep -qx yes out.txt"),
        "three": _repo(tmp_path / "three", "no", "grep -qx yes out.txt"),
        "crash": _repo(tmp_path / "crash", "yes", crash),
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
    tmp_path: Path, cluster: None
) -> None:
    folder = tmp_path / "plain"
    write_loop(folder, 'goal = "x"\n[[gates]]\ntype = "command"\ncmd = "true"\n')
    with pytest.raises(Exception, match="not in one"):
        Batch([BatchTask(name="plain", loop=str(folder / "loop.toml"))], loop_from_toml,
              backend="ray", out=tmp_path / "out").run()  # fmt: skip
