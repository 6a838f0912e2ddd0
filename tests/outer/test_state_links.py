"""The harness follows no link it did not make: an agent that renames the folder holding the
harness's state and plants links in its place cannot make the harness write elsewhere."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from harness import StopReason
from harness.assemble.launch import recorded_loop
from harness.observe.events import read_events
from harness.sandbox.bwrap import bwrap_problem
from harness.spec.loop_spec import LoopSpec

RUN_ID = "attack01"
BACKENDS = [
    "none",
    pytest.param("bwrap", marks=pytest.mark.skipif(bwrap_problem() is not None, reason="no bwrap")),
]


def _loop(tmp_path: Path, backend: str, command: str) -> Path:
    """A loop.toml under ``isolation = "none"`` whose agent runs ``command`` once."""
    project = tmp_path / "project"
    project.mkdir()
    script = [{"name": "run_shell", "arguments": {"command": command}}, "done"]
    (tmp_path / "author.json").write_text(json.dumps(script))
    (project / "loop.toml").write_text(
        textwrap.dedent(f"""\
        name = "links"
        goal = "write notes"
        isolation = "none"
        model = "scripted:../author.json"
        max_iterations = 1
        [critic]
        enabled = false
        [[gates]]
        type = "command"
        cmd = "true"
        [sandbox]
        backend = "{backend}"
        """)
    )
    return project


def _bashrc(tmp_path: Path) -> Path:
    """A host file a shell sources: what the attack wants the harness to append to."""
    target = tmp_path / "home" / ".bashrc"
    target.parent.mkdir()
    target.write_text("# the user's own\n")
    return target


def _run(project: Path):  # type: ignore[no-untyped-def]
    return recorded_loop(LoopSpec.from_toml(project / "loop.toml"), run_id=RUN_ID).run()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_renamed_state_folder_with_a_planted_event_log_link_stops_the_run(
    tmp_path: Path, backend: str
) -> None:
    bashrc = _bashrc(tmp_path)
    project = _loop(
        tmp_path,
        backend,
        f"mv .harness .harness.old && mkdir -p .harness/runs/{RUN_ID} && "
        f"ln -s {bashrc} .harness/runs/{RUN_ID}/events.jsonl",
    )

    result = _run(project)

    assert bashrc.read_text() == "# the user's own\n"  # nothing written through the link
    assert result.stop_reason is StopReason.ERROR
    assert f".harness/runs/{RUN_ID}/events.jsonl" in result.message
    assert "follows no link it did not make" in result.message
    kept = read_events(project / ".harness.old" / "runs" / RUN_ID / "events.jsonl")
    assert kept[0].kind == "run_start"  # the log the harness made, moved aside with its folder


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_state_folder_swapped_for_a_link_is_not_written_through(
    tmp_path: Path, backend: str
) -> None:
    elsewhere = tmp_path / "elsewhere"  # a host folder (the home folder, say)
    (elsewhere / "runs" / RUN_ID).mkdir(parents=True)
    (elsewhere / "runs" / RUN_ID / "events.jsonl").write_text("")
    project = _loop(tmp_path, backend, f"mv .harness .harness.old && ln -s {elsewhere} .harness")

    result = _run(project)

    assert result.stop_reason is StopReason.ERROR
    assert "'.harness' on its path is a symlink" in result.message
    assert (elsewhere / "runs" / RUN_ID / "events.jsonl").read_text() == ""
    assert sorted(p.name for p in elsewhere.rglob("*")) == sorted(["events.jsonl", "runs", RUN_ID])


def test_a_renamed_run_folder_replaced_by_a_plain_one_is_refused(tmp_path: Path) -> None:
    """Without a sandbox the run folder itself can be renamed: the next write finds a file that
    is not the one the harness made, and stops."""
    project = _loop(
        tmp_path,
        "none",
        f"mv .harness/runs/{RUN_ID} .harness/runs/moved && mkdir .harness/runs/{RUN_ID} && "
        f"echo forged > .harness/runs/{RUN_ID}/events.jsonl",
    )

    result = _run(project)

    assert result.stop_reason is StopReason.ERROR
    assert "not the file the harness made" in result.message
    assert (project / ".harness" / "runs" / RUN_ID / "events.jsonl").read_text() == "forged\n"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_progress_folder_swapped_for_a_link_stops_the_run(tmp_path: Path, backend: str) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    project = _loop(tmp_path, backend, f"mv progress progress.old && ln -s {elsewhere} progress")

    result = _run(project)

    if backend == "bwrap":  # the progress folder is read-only to commands: the swap itself fails
        assert result.stop_reason is StopReason.PASSED
        assert not (project / "progress").is_symlink()
        assert (project / "progress" / "links.md").is_file()
    else:
        assert result.stop_reason is StopReason.ERROR
        assert "progress/links" in result.message
        assert "'progress' on its path is a symlink" in result.message
    assert list(elsewhere.iterdir()) == []  # no progress.md, spend record, report or temp file
