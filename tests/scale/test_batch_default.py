"""``Batch(tasks, workers=...)`` as the design names it: tasks that name a loop.toml run as declared."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import Batch
from harness.core.errors import ConfigError
from tests.scale.loop_projects import loop_project

GATE = "grep -qx yes out.txt"


def test_a_batch_without_a_loop_builder_runs_each_tasks_loop_toml(tmp_path: Path) -> None:
    tasks = [
        {"name": "right", "loop": str(loop_project(tmp_path / "right", "yes", GATE) / "loop.toml")},
        {"name": "wrong", "loop": str(loop_project(tmp_path / "wrong", "no", GATE) / "loop.toml")},
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
