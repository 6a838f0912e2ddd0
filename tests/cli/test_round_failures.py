"""A round that fails says why as it happens, and the verdict names the last round's failure:
the gate that failed, and the session's own end when it was cut short (step cap, stuck, ...)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_cli import harness, write_loop

CAPPED_LOOP = """\
name = "capped"
goal = "write hello.txt"
model = "scripted:script.json"
isolation = "none"
max_iterations = 2
patience = 5
[agent]
max_steps = 1
[critic]
enabled = false
[[gates]]
type = "command"
name = "hello exists"
cmd = "test -s hello.txt"
"""
NOTE = {"name": "write_file", "arguments": {"path": "notes.txt", "content": "thinking"}}


def test_a_round_cut_short_by_the_step_cap_says_so_live_and_in_the_verdict(
    tmp_path: Path,
) -> None:
    write_loop(tmp_path, CAPPED_LOOP)
    (tmp_path / "script.json").write_text(json.dumps([NOTE, NOTE]))
    result = harness("run", cwd=tmp_path)
    assert result.returncode == 3, result.stderr
    failed = [
        line
        for line in result.stderr.splitlines()
        if line.startswith("round ") and " failed: " in line
    ]
    assert failed == [
        "round 1/2 failed: hello exists; the session ended early: step cap of 1 reached",
        "round 2/2 failed: hello exists; the session ended early: step cap of 1 reached",
    ]
    assert "round 1/2 · step 1 · running gates hello exists · " in result.stderr
    assert result.stdout.splitlines()[0] == (
        "MAX_ITERATIONS: Loop finished after 2 iteration(s): MAX_ITERATIONS (round 2 failed: "
        "hello exists; the session ended early: step cap of 1 reached)"
    )
