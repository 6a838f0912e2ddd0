"""An OuterLoop that owns MCP servers: started for its run, given to the agent, stopped after."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import Agent, CommandGate, OuterLoop, ScriptedModel, StopReason, ToolCall
from harness.core.errors import ConfigError
from harness.outer.task import TaskInputs, render_task
from harness.tools.mcp import McpServer
from tests.cli.test_mcp_sandbox import alive
from tests.conftest import make_repo

TIME_SERVER = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]
CONVERT = ToolCall(
    "mcp__time__convert_time",
    {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
)
GOAL = "answer.txt holds the time in Tokyo"


def outer(repo: Path, model: ScriptedModel) -> OuterLoop:
    """A loop with a time server marked as its own: its environment names the loop's repo."""
    server = McpServer("time", command=TIME_SERVER, env={"HARNESS_TEST_LOOP": str(repo)})
    return OuterLoop(
        GOAL,
        Agent(model),
        gates=[CommandGate("test -s answer.txt", name="answered")],
        workspace=repo,
        max_iterations=1,
        mcp=[server],
    )


def servers_of(repo: Path) -> list[int]:
    """Live time servers started by the loop of ``repo`` (not any other on this machine)."""
    mark = f"HARNESS_TEST_LOOP={repo}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if (
                not entry.name.isdigit()
                or b"mcp_server_time" not in (entry / "cmdline").read_bytes()
            ):
                continue
            if mark in (entry / "environ").read_bytes().split(b"\0") and alive(int(entry.name)):
                found.append(int(entry.name))
        except OSError:  # gone, or another user's
            continue
    return found


def gone(repo: Path, wait: float = 5.0) -> bool:
    """Whether the servers of ``repo``'s loop are gone (their sandbox may take a moment to exit)."""
    deadline = time.monotonic() + wait
    while servers_of(repo) and time.monotonic() < deadline:
        time.sleep(0.1)
    return servers_of(repo) == []


def test_the_loops_servers_serve_its_run_and_stop_with_it(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    bystander = subprocess.Popen(TIME_SERVER, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    running: list[int] = []

    def convert(messages: object, tools: object) -> ToolCall:
        running.extend(servers_of(repo))  # while the run goes on
        return CONVERT

    write = ToolCall("write_file", {"path": "answer.txt", "content": "21:00"})
    model = ScriptedModel([convert, write, "done"])
    loop = outer(repo, model)
    try:
        result = loop.run()
        assert result.stop_reason is StopReason.PASSED, result.message
        offered = {entry["function"]["name"] for entry in model.calls[0].tools}
        assert {"mcp__time__convert_time", "mcp__time__get_current_time", "run_shell"} <= offered
        assert "T21:00:00+09:00" in str(model.calls[1].messages[-1]["content"])
        assert "mcp__time__convert_time" not in loop.settings.agent.toolbox  # only for the run
        assert running  # the check sees the loop's own server
        assert bystander.pid not in running
        assert gone(repo)
        assert bystander.poll() is None  # a time server the loop did not start is left alone
    finally:
        bystander.kill()
        bystander.wait()


def test_a_task_that_fits_only_without_the_servers_tools_is_refused_before_any_work(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    plain = Agent(ScriptedModel([]))
    first = render_task(TaskInputs(GOAL, 1, 1, ""))
    messages = [
        {"role": "system", "content": plain.system_prompt},
        {"role": "user", "content": first},
    ]
    needed = plain.model.count_tokens(messages, plain.toolbox.schemas())
    model = ScriptedModel(["unused"], context_window=needed + 5)
    with pytest.raises(ConfigError, match="tokens with the system prompt and tool schemas"):
        outer(repo, model).run()
    assert model.calls == []
    assert gone(repo)
    branches = [b for b in (repo / ".git" / "refs" / "heads").iterdir()]
    assert [b.name for b in branches] == ["main"]  # no run branch was made
