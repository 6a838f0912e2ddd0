"""A batch's records out of its tasks' reach: one task's agent cannot pass another."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from harness.core.nofollow import UnsafePath
from harness.sandbox.bwrap import bwrap_problem
from harness.scale.batch import Batch
from harness.scale.batch_task import TaskRecord, read_record, record_path

BACKENDS = [
    "none",
    pytest.param("bwrap", marks=pytest.mark.skipif(bwrap_problem() is not None, reason="no bwrap")),
]


def _project(tmp_path: Path, backend: str, forge: str) -> Path:
    """One loop.toml working in place; the gate never passes."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "loop.toml").write_text(
        textwrap.dedent(f"""\
        name = "task"
        goal = "say yes"
        isolation = "none"
        max_iterations = 1
        [critic]
        enabled = false
        [[gates]]
        type = "command"
        cmd = "false"
        [sandbox]
        backend = "{backend}"
        """)
    )
    scripts = {"honest": "done", "forger": {"name": "run_shell", "arguments": {"command": forge}}}
    for name, first in scripts.items():
        (tmp_path / f"{name}.json").write_text(json.dumps([first, "done"]))
    return project


def _tasks(tmp_path: Path, project: Path) -> list[dict[str, object]]:
    return [
        {"name": n, "loop": str(project / "loop.toml"), "model": f"scripted:{tmp_path}/{n}.json"}
        for n in ("honest", "forger")
    ]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_record_rewritten_by_another_task_is_not_counted_as_passed(
    tmp_path: Path, backend: str
) -> None:
    forged = TaskRecord(name="honest", status="passed", stop_reason="PASSED", rounds=1)
    record = ".harness/batch/run/tasks/honest/record.json"
    forge = f"printf '%s' '{forged.model_dump_json(indent=2)}' > {record}"
    project = _project(tmp_path, backend, forge)
    out = project / ".harness" / "batch" / "run"

    first = Batch(_tasks(tmp_path, project), workers=1, out=out).run()

    assert [(r.name, r.status) for r in first.tasks] == [
        ("honest", "escalated"),
        ("forger", "escalated"),
    ]
    assert json.loads((project / record).read_text())["status"] == "passed"  # the forgery

    again = Batch(_tasks(tmp_path, project), workers=1, out=out).run()

    assert [(r.name, r.status, r.starts) for r in again.tasks] == [
        ("honest", "escalated", 2),  # not believed: run again, and it escalates again
        ("forger", "escalated", 1),
    ]
    assert again.counts == {"escalated": 2}


def test_a_record_behind_a_link_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    TaskRecord(name="a", status="escalated").save(out)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    path = record_path(out, "a")
    path.unlink()
    path.symlink_to(elsewhere / "record.json")

    with pytest.raises(UnsafePath, match="record.json"):
        TaskRecord(name="a", status="passed").save(out)
    with pytest.raises(UnsafePath, match="record.json"):
        read_record(out, "a")
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize(
    "cut", ["harness.scale.record_ledger.remember", "harness.core.nofollow.write_atomic"]
)
def test_a_batch_killed_while_saving_a_record_never_shows_an_ending_it_does_not_believe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cut: str
) -> None:
    """Killed at either write of a save, the record on disk says "running" and the task runs
    again; a record that says "passed" is one the next batch believes."""
    out = tmp_path / "out"
    TaskRecord(name="a", status="running").save(out)

    def killed(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cut, killed)
    with pytest.raises(KeyboardInterrupt):
        TaskRecord(name="a", status="passed").save(out)
    monkeypatch.undo()

    assert json.loads(record_path(out, "a").read_text())["status"] == "running"
    assert read_record(out, "a").status in ("running", "interrupted")
