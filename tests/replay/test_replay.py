"""Replaying a recorded run: the same verdicts when nothing changed, and a gate or a tool changed
since the recording reported at the exact round and step."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from harness.assemble import build
from harness.assemble.launch import recorded_loop
from harness.core.stop import StopReason
from harness.core.trajectory_schema import ToolStep, VerdictStep
from harness.observe.run_summary import RUNS_DIR
from harness.observe.trajectory import Trajectory
from harness.replay.run import replay_run
from harness.spec.loop_spec import LoopSpec
from harness.tools import Tool, ToolContext, ToolResult
from tests.conftest import make_repo, verdict_entry

SCRIPT = {
    "rounds": {
        "1": [
            {"name": "write_file", "arguments": {"path": "out.txt", "content": "yes\n"}},
            {"name": "read_file", "arguments": {"path": "notes.txt"}},
            {"name": "run_shell", "arguments": {"command": "cat out.txt"}},
            "out.txt says yes",
            verdict_entry(9, ["it says yes"]),
        ]
    }
}
LOOP = """\
name = "small"
goal = "out.txt must say yes"
model = "scripted:script.json"
isolation = "worktree"
max_iterations = 2
[[gates]]
type = "command"
name = "says yes"
cmd = "grep -qx yes out.txt"
[critic]
threshold = 8
artifact = "final"
"""


def _recorded(tmp_path: Path) -> tuple[Path, Path]:
    """A small project's run, recorded: the loop.toml and the run's folder."""
    root = make_repo(
        tmp_path / "project",
        {
            "loop.toml": LOOP,
            "script.json": json.dumps(SCRIPT),
            "notes.txt": "a note\n",
            ".gitignore": ".harness/\nprogress/\n",
        },
    )
    result = recorded_loop(LoopSpec.from_toml(root / "loop.toml"), run_id="rec00001").run()
    assert result.stop_reason is StopReason.PASSED, result.message
    return root / "loop.toml", root / RUNS_DIR / "rec00001"


def _verdicts(run: Path) -> list[tuple[int | None, float, bool]]:
    records = Trajectory.load(run).records
    return [(r.round, r.score, r.passed) for r in records if isinstance(r, VerdictStep)]


def test_a_replay_of_an_unchanged_run_has_no_divergence_and_the_same_verdicts(
    tmp_path: Path,
) -> None:
    loop, run = _recorded(tmp_path)
    outcome = replay_run(run, loop=loop)
    assert outcome.divergence is None, outcome.describe()
    assert outcome.result.stop_reason is StopReason.PASSED
    replayed = loop.parent / RUNS_DIR / outcome.run_id
    assert _verdicts(replayed) == _verdicts(run) == [(1, 9.0, True)]
    assert "no divergence" in outcome.describe()


def test_a_gate_changed_after_the_recording_is_the_divergence(tmp_path: Path) -> None:
    loop, run = _recorded(tmp_path)
    loop.write_text(LOOP.replace("grep -qx yes out.txt", "grep -qx no out.txt"))
    outcome = replay_run(run, last_round=1, loop=loop)
    assert outcome.divergence is not None
    found = outcome.divergence
    assert (found.round, found.step, found.what) == (1, None, "gate says yes differs")
    assert (found.recorded, found.now) == ("passed", "failed")
    assert outcome.result.stop_reason is StopReason.MAX_ITERATIONS  # capped at round 1


def test_a_tool_changed_after_the_recording_is_the_divergence_at_its_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop, run = _recorded(tmp_path)
    real = build.default_tools

    def shouting() -> list[Tool]:
        """Today's tools: read_file now answers in capitals."""
        tools = real()
        reader = next(t for t in tools if t.name == "read_file")
        louder = copy.copy(reader)

        def run(arguments: dict[str, Any] | str, ctx: ToolContext) -> ToolResult:
            result = reader.run(arguments, ctx)
            return dataclasses.replace(result, output=result.output.upper())

        louder.run = run  # type: ignore[method-assign]
        return [louder if t is reader else t for t in tools]

    monkeypatch.setattr(build, "default_tools", shouting)
    outcome = replay_run(run, loop=loop)
    found = outcome.divergence
    assert found is not None
    assert (found.round, found.step, found.what) == (
        1,
        2,
        "the observation of read_file differs",
    )
    assert "a note" in found.recorded
    assert "A NOTE" in found.now
    assert outcome.result.stop_reason is StopReason.PASSED  # the rest is as recorded


def test_a_subagent_with_a_model_of_its_own_is_answered_by_the_recording(tmp_path: Path) -> None:
    parent = {
        "rounds": {
            "1": [
                {
                    "name": "subagent",
                    "arguments": {"task": "what goes in out.txt?", "profile": "aide"},
                },
                {"name": "write_file", "arguments": {"path": "out.txt", "content": "yes\n"}},
                "out.txt says yes",
                verdict_entry(9, ["it says yes"]),
            ]
        }
    }
    root = make_repo(
        tmp_path / "project",
        {
            "loop.toml": LOOP + '[subagents.profiles.aide]\nmodel = "scripted:aide.json"\n',
            "script.json": json.dumps(parent),
            "aide.json": json.dumps(["the word yes"]),
            ".gitignore": ".harness/\nprogress/\n",
        },
    )
    result = recorded_loop(LoopSpec.from_toml(root / "loop.toml"), run_id="rec00002").run()
    assert result.stop_reason is StopReason.PASSED, result.message
    (root / "aide.json").write_text(json.dumps(["the word no"]))  # its model, changed since

    outcome = replay_run(root / RUNS_DIR / "rec00002", loop=root)
    assert outcome.divergence is None, outcome.describe()  # the recording answered the aide
    replayed = Trajectory.load(root / RUNS_DIR / outcome.run_id)
    observations = [r.observation for r in replayed.records if isinstance(r, ToolStep)]
    assert "the word yes" in replayed.text(observations[0])
    assert "the word no" not in replayed.text(observations[0])
