"""``Batch(tasks, workers=...)`` as the design names it: tasks that name a loop.toml run as declared."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import Batch
from harness.core.errors import ConfigError
from tests.cli.test_cli import write_loop
from tests.conftest import git, make_repo


def _project(folder: Path, answer: str) -> Path:
    repo = make_repo(folder, {"README.md": "hi\n"})
    script = [{"name": "write_file", "arguments": {"path": "out.txt", "content": answer}}, "done"]
    (repo / "script.json").write_text(json.dumps(script))
    write_loop(
        repo,
        """\
        goal = "out.txt says yes"
        model = "scripted:script.json"
        max_iterations = 1
        [critic]
        enabled = false
        [[gates]]
        type = "command"
        name = "says yes"
        cmd = "grep -qx yes out.txt"
        """,
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "loop")
    return repo


def test_a_batch_without_a_loop_builder_runs_each_tasks_loop_toml(tmp_path: Path) -> None:
    tasks = [
        {"name": "right", "loop": str(_project(tmp_path / "right", "yes") / "loop.toml")},
        {"name": "wrong", "loop": str(_project(tmp_path / "wrong", "no") / "loop.toml")},
    ]
    summary = Batch(tasks, workers=2, out=tmp_path / "out").run()
    outcome = {record.name: (record.stop_reason, record.rounds) for record in summary.tasks}
    assert outcome == {"right": ("PASSED", 1), "wrong": ("MAX_ITERATIONS", 1)}
    assert summary.pass_rate == 0.5
    assert (tmp_path / "out" / "summary.json").is_file()


def test_a_task_without_a_loop_toml_is_refused_by_name(tmp_path: Path) -> None:
    summary = Batch([{"name": "bare", "goal": "x"}], workers=1, out=tmp_path / "out").run()
    (record,) = summary.tasks
    assert record.name == "bare"
    assert "field 'loop': required" in record.message
    with pytest.raises(ConfigError, match="workers"):
        Batch([{"name": "bare", "goal": "x"}], workers=0)
