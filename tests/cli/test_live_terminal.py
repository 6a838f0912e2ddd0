"""The live display in a real terminal: tmux, 80 columns, a run in the middle of a long command."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.cli.test_cli import write_loop

pytestmark = pytest.mark.skipif(
    shutil.which("tmux") is None, reason="tmux is not installed (Debian package 'tmux')"
)

LOOP = """\
name = "slow"
goal = "write done.txt after the long check"
model = "scripted:script.json"
isolation = "none"
[critic]
enabled = false
[[gates]]
type = "command"
name = "done"
cmd = "test -s done.txt"
"""
SCRIPT = [
    {"name": "run_shell", "arguments": {"command": "sleep 8 && echo checked"}},
    {"name": "write_file", "arguments": {"path": "done.txt", "content": "yes"}},
    "done",
]


def tmux(socket: str, *args: str) -> str:
    result = subprocess.run(
        ["tmux", "-L", socket, *args],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "TERM": "xterm-256color"},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def wait_for_line(socket: str, pattern: str, *, timeout: float = 60) -> tuple[str, list[str]]:
    """The first pane line matching ``pattern``, and the whole pane at that moment."""
    deadline = time.monotonic() + timeout
    while True:
        pane = tmux(socket, "capture-pane", "-p", "-t", "live").splitlines()
        found = [line for line in pane if re.search(pattern, line)]
        if found:
            return found[-1], pane
        assert time.monotonic() < deadline, "\n".join(pane)
        time.sleep(0.2)


def test_the_live_line_in_an_80_column_terminal_during_a_long_command(tmp_path: Path) -> None:
    write_loop(tmp_path, LOOP)
    (tmp_path / "script.json").write_text(json.dumps(SCRIPT))
    command = " ".join(
        [
            f"cd {shlex.quote(str(tmp_path))} &&",
            shlex.quote(sys.executable),
            "-m harness.cli.main run; sleep 60",
        ]
    )
    socket = f"harness-test-{uuid.uuid4().hex[:8]}"
    tmux(socket, "new-session", "-d", "-s", "live", "-x", "80", "-y", "24", command)
    try:
        line, pane = wait_for_line(socket, r"run_shell sleep 8")
        assert all(len(row) <= 80 for row in pane), pane
        assert line.startswith("round 1/10 · run_shell sleep 8 && echo checked · ")  # no step: 80
        assert re.search(r" · [\d.]+k? tok · \$0\.000 · 00:0\d$", line), line
        first_time = line.rsplit(" · ", 1)[-1]
        # No event arrives while the command sleeps, yet the time runs on.
        later, _ = wait_for_line(socket, r"run_shell sleep 8 .* · 00:0\d$", timeout=10)
        deadline = time.monotonic() + 10
        while later.rsplit(" · ", 1)[-1] == first_time:
            assert time.monotonic() < deadline, later
            later, _ = wait_for_line(socket, r"run_shell sleep 8 .* · 00:0\d$")
        verdict, pane = wait_for_line(socket, r"^PASSED: round 1 passed")
        assert all(len(row) <= 80 for row in pane), pane
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, timeout=30)
