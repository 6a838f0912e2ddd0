"""A stdio MCP server ends with the harness, even one that goes on after its input closes: a
harness killed with SIGKILL leaves no server running, with a sandbox or without one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from functools import partial
from pathlib import Path

import pytest

from harness.sandbox import Sandbox
from harness.sandbox.bwrap import bwrap_problem
from harness.sandbox.limits import LIFELINE_SECONDS
from harness.tools import ToolContext, mcp_relay
from harness.tools.mcp import McpServer, mcp_tools
from tests.conftest import alive, processes_naming, within
from tests.sandbox.test_lifeline import watchers

# Serves until its input closes, then goes on (as a server with work of its own would), and
# starts a second process that outlives any of its own handling. Both name this file in their
# command line: that is how the test finds them, with a sandbox's pid namespace or without.
DEAF_SERVER = """
import subprocess, sys, time
from mcp.server.mcpserver import MCPServer

subprocess.Popen([sys.executable, "-c", "import time; time.sleep(61)", __file__])
app = MCPServer("deaf")

@app.tool()
def ping() -> str:
    \"\"\"Answers pong.\"\"\"
    return "pong"

app.run()
time.sleep(61)
"""

relay_script = Path(mcp_relay.__file__)


def _harness(server: Path, backend: str) -> subprocess.Popen[bytes]:
    """A Python process standing for the harness: it lists the server's tools (the server
    started and answering), says so, and waits."""
    server.write_text(DEAF_SERVER)
    program = f"""\
        import sys, time
        from harness.sandbox import Sandbox
        from harness.tools.mcp import McpServer, mcp_tools
        server = McpServer("deaf", command=[sys.executable, {str(server)!r}])
        with mcp_tools([server], sandbox=Sandbox({backend!r})) as tools:
            print(" ".join(tool.name for tool in tools), flush=True)
            time.sleep(120)
    """
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(program)], cwd=server.parent,
        stdout=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip


@pytest.mark.parametrize("backend", ["none", "bwrap"])
def test_a_server_deaf_to_its_closed_input_ends_with_the_harness(
    tmp_path: Path, backend: str
) -> None:
    if backend == "bwrap" and bwrap_problem():
        pytest.skip(bwrap_problem())
    server = tmp_path / "deaf.py"
    holder = _harness(server, backend)
    assert holder.stdout is not None
    try:
        assert holder.stdout.readline().decode().split() == ["mcp__deaf__ping"]
        running = partial(processes_naming, str(server), but=holder.pid)
        assert within(30, lambda: len(running()) >= 3), running()  # relay, server, helper at least
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
        assert within(LIFELINE_SECONDS * 10, lambda: not running()), "it outlived the harness"
    finally:
        if holder.poll() is None:
            os.kill(holder.pid, signal.SIGKILL)
        for pid in processes_naming(str(server), but=holder.pid):
            os.kill(pid, signal.SIGKILL)


def test_a_relay_in_its_callers_group_ends_its_server_alone(tmp_path: Path) -> None:
    """Not the leader of a group of its own, the relay kills its server, never its caller's
    group (a neighbour there lives on)."""
    marker = str(tmp_path / "server")
    program = f"""\
        import os, subprocess, sys, time
        neighbour = subprocess.Popen(["sleep", "60"])
        print(neighbour.pid, flush=True)
        relay = subprocess.Popen(
            [sys.executable, "-I", {str(relay_script)!r}, "1000", str(os.getpid()),
             {str(LIFELINE_SECONDS)!r}, "--", sys.executable, "-c", "import time; time.sleep(61)",
             {marker!r}],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
        time.sleep(120)
    """
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(program)], stdout=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    assert holder.stdout is not None
    neighbour = int(holder.stdout.readline())
    try:
        running = partial(processes_naming, marker, but=holder.pid)
        assert within(30, running), "the server never started"
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
        assert within(LIFELINE_SECONDS * 10, lambda: not running()), "it outlived the harness"
        assert alive(neighbour), "the relay killed its caller's group"
    finally:
        for pid in [neighbour, *processes_naming(marker, but=holder.pid)]:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_no_shell_watcher_runs_beside_a_server(tmp_path: Path) -> None:
    """Without a sandbox a command's shell watcher forks a ``sleep`` five times a second; a
    server, ended by its relay, runs without one."""
    server = tmp_path / "deaf.py"
    server.write_text(DEAF_SERVER.replace("app.run()\ntime.sleep(61)", "app.run()"))
    with mcp_tools([McpServer("deaf", command=[sys.executable, str(server)])],
                   sandbox=Sandbox("none")) as (ping,):  # fmt: skip
        assert ping.run({}, ToolContext(workspace=tmp_path)).output == "pong"
        assert processes_naming(str(server), but=os.getpid()) != []
        assert watchers() == []
