"""MCP servers as tools: a real server from the registry, and a server written here for the failures."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.core.errors import ConfigError
from harness.tools import ToolContext
from harness.tools.mcp import McpServer, mcp_tools

TIME_SERVER = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]

FLAKY_SERVER = '''
import os, sys, time
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

app = MCPServer("flaky")

@app.tool()
def echo(text: str) -> str:
    """Say text back, with the SECRET variable if the server was given one."""
    return text + os.environ.get("SECRET", "") + os.environ.get("OPENAI_API_KEY", "")

@app.tool()
def refuse(reason: str) -> str:
    """Fail with reason."""
    raise ToolError(reason)

@app.tool()
def crash() -> str:
    """Exit the server process in the middle of the call."""
    print("crashing on purpose", file=sys.stderr, flush=True)
    os._exit(3)

@app.tool()
def hang() -> str:
    """Never answer."""
    time.sleep(3600)
    return "late"

@app.tool()
def flood() -> str:
    """A very long answer."""
    return "head" + "x" * 100_000 + "tail"

@app.tool()
def numbers(count: int) -> dict[str, list[int]]:
    """Structured content: the first count numbers."""
    return {"numbers": list(range(count))}

if len(sys.argv) > 1:
    app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
else:
    app.run()
'''


@pytest.fixture
def flaky(tmp_path: Path) -> McpServer:
    script = tmp_path / "flaky_server.py"
    script.write_text(FLAKY_SERVER)
    return McpServer(
        "flaky",
        command=[sys.executable, str(script)],
        call_timeout=3,
        env={"SECRET": "-s3"},
        cwd=tmp_path,  # the sandboxed server sees (and may write) its own folder
    )


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(workspace=tmp_path, max_output_chars=2_000)


def test_a_server_from_the_registry_answers_with_its_real_result(ctx: ToolContext) -> None:
    with mcp_tools([McpServer("time", command=TIME_SERVER)]) as tools:
        by_name = {item.name: item for item in tools}
        assert sorted(by_name) == ["mcp__time__convert_time", "mcp__time__get_current_time"]
        convert = by_name["mcp__time__convert_time"]
        assert convert.parameters["required"] == ["source_timezone", "time", "target_timezone"]
        result = convert.run(
            {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}, ctx
        )
    assert not result.is_error
    assert '"datetime": "' in result.output
    assert "T21:00:00+09:00" in result.output  # Tokyo is UTC+9 all year


def test_tool_errors_and_structured_content_become_observations(
    flaky: McpServer, ctx: ToolContext
) -> None:
    with mcp_tools([flaky]) as tools:
        by_name = {item.name.removeprefix("mcp__flaky__"): item for item in tools}
        echoed = by_name["echo"].run({"text": "hi"}, ctx)
        refused = by_name["refuse"].run({"reason": "no such record"}, ctx)
        numbers = by_name["numbers"].run('{"count": 3}', ctx)
        flood = by_name["flood"].run({}, ctx)
        bad_json = by_name["echo"].run("{not json", ctx)
        wrong_type = by_name["echo"].run({"text": 5}, ctx)
    assert echoed.output == "hi-s3"  # the server got its env, and not the harness's secrets
    assert refused.is_error
    assert refused.output.startswith("error: ")
    assert "no such record" in refused.output
    assert not numbers.is_error
    assert '"numbers"' in numbers.output
    assert "[0, 1, 2]" in numbers.output.replace("\n", "").replace(" ", "").replace(",", ", ")
    assert len(flood.output) <= 2_000
    assert flood.output.startswith("head")
    assert flood.output.endswith("tail")
    assert bad_json.is_error
    assert bad_json.malformed
    assert "not valid JSON" in bad_json.output
    assert wrong_type.is_error  # the server validates against its own schema


def test_a_server_that_dies_mid_call_is_an_error_observation_not_a_hang(
    flaky: McpServer, ctx: ToolContext
) -> None:
    with mcp_tools([flaky]) as tools:
        by_name = {item.name.removeprefix("mcp__flaky__"): item for item in tools}
        started = time.monotonic()
        crashed = by_name["crash"].run({}, ctx)
        after = by_name["echo"].run({"text": "anyone?"}, ctx)
        elapsed = time.monotonic() - started
    assert crashed.is_error
    assert "'flaky'" in crashed.output
    assert "crashing on purpose" in crashed.output  # the server's stderr says why
    assert after.is_error
    assert "not running" in after.output
    assert elapsed < 15


def test_a_server_that_never_answers_is_bounded_by_call_timeout(
    flaky: McpServer, ctx: ToolContext
) -> None:
    started = time.monotonic()
    with mcp_tools([flaky]) as tools:
        by_name = {item.name.removeprefix("mcp__flaky__"): item for item in tools}
        call_started = time.monotonic()
        hung = by_name["hang"].run({}, ctx)
        call_took = time.monotonic() - call_started
        still_there = by_name["echo"].run({"text": "ok"}, ctx)
    assert hung.is_error
    assert "did not answer hang within 3s (call_timeout)" in hung.output
    assert 2.5 < call_took < 30
    assert still_there.output == "ok-s3"
    assert time.monotonic() - started < 40  # stopping kills the busy server too


def test_allow_and_deny_choose_the_tools(flaky: McpServer) -> None:
    server = McpServer(
        "flaky", command=flaky.command, cwd=flaky.cwd, allow=["e*", "n*", "crash"], deny=["crash"]
    )
    with mcp_tools([server]) as tools:
        assert [item.name for item in tools] == ["mcp__flaky__echo", "mcp__flaky__numbers"]
    typo = McpServer("flaky", command=flaky.command, cwd=flaky.cwd, allow=["ecko"])
    with pytest.raises(ConfigError, match=r"allow pattern 'ecko' matches none of its tools \(echo"):
        mcp_tools([typo]).__enter__()


def test_start_up_failures_are_clear_configuration_errors(tmp_path: Path) -> None:
    missing = McpServer("gone", command=[str(tmp_path / "no-such-server")])
    with pytest.raises(ConfigError, match=r"mcp 'gone': could not start: .*no-such-server"):
        mcp_tools([missing]).__enter__()
    dies = McpServer(
        "dies", command=[sys.executable, "-c", "import sys; sys.exit('bad token for the API')"]
    )
    with pytest.raises(
        ConfigError, match=r"(?s)mcp 'dies': could not start.*bad token for the API"
    ):
        mcp_tools([dies]).__enter__()
    silent = McpServer(
        "silent", command=[sys.executable, "-c", "import time; time.sleep(60)"], startup_timeout=2
    )
    started = time.monotonic()
    with pytest.raises(ConfigError, match=r"mcp 'silent': did not start within 2s"):
        mcp_tools([silent]).__enter__()
    assert time.monotonic() - started < 15


def test_a_server_over_streamable_http(tmp_path: Path, ctx: ToolContext) -> None:
    script = tmp_path / "flaky_server.py"
    script.write_text(FLAKY_SERVER)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, str(script), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        remote = McpServer("remote", url=f"http://127.0.0.1:{port}/mcp", allow=["echo", "refuse"])
        with mcp_tools([remote]) as tools:
            echo, refuse = tools
            assert echo.name == "mcp__remote__echo"
            echoed = echo.run({"text": "over http"}, ctx)
            refused = refuse.run({"reason": "not over http"}, ctx)
    finally:
        server.kill()
        server.wait(10)
    assert (echoed.output, echoed.is_error) == ("over http", False)
    assert refused.is_error
    assert "not over http" in refused.output
    with pytest.raises(ConfigError, match="mcp 'remote': could not start"):
        mcp_tools([remote]).__enter__()  # the server is gone


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "a__b", "command": ["x"]}, "single '_'"),
        ({"name": "a", "command": ["x"], "url": "http://127.0.0.1/mcp"}, "either command or url"),
        ({"name": "a"}, "either command or url"),
        ({"name": "a", "command": ["x"], "call_timeout": 0}, "call_timeout: must be a finite"),
    ],
)
def test_bad_server_declarations_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        McpServer(**kwargs)


def test_two_servers_with_one_name_are_refused() -> None:
    server = McpServer("same", command=["x"])
    with pytest.raises(ConfigError, match="two servers are named 'same'"):
        mcp_tools([server, server]).__enter__()
