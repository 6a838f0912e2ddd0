"""loop.toml ``[[mcp]]``: a real server from the registry gives the agent its tools."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from harness.assemble.build import build_loop, mcp_servers
from harness.core.errors import ConfigError
from harness.core.sink import NullSink
from harness.models.scripted import ScriptedModel
from harness.spec import LoopSpec
from harness.tools.mcp import mcp_tools
from tests.cli.test_cli import harness, write_loop
from tests.conftest import git, make_repo

TIME_LOOP = f"""\
name = "clock"
goal = "say what time noon UTC is in Tokyo"
isolation = "none"
model = "scripted:author.json"
max_iterations = 1

[critic]
enabled = false

[[gates]]
type = "command"
name = "answered"
cmd = "test -s answer.txt"

[[mcp]]
name = "time"
command = {json.dumps([sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"])}
allow = ["convert_time"]
"""

CONVERT = {
    "name": "mcp__time__convert_time",
    "arguments": {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
}


def test_the_agent_calls_a_registry_server_declared_in_loop_toml(tmp_path: Path) -> None:
    (tmp_path / "author.json").write_text(
        json.dumps(
            [
                CONVERT,
                {"name": "write_file", "arguments": {"path": "answer.txt", "content": "21:00"}},
                "done",
            ]
        )
    )
    write_loop(tmp_path, TIME_LOOP)
    config = LoopSpec.from_toml(tmp_path)
    with mcp_tools(mcp_servers(config)) as tools:
        loop = build_loop(config, events=NullSink(), tools=tools)
        result = loop.run()
    assert result.passed
    model = loop.settings.agent.model
    assert isinstance(model, ScriptedModel)
    offered = {entry["function"]["name"] for entry in model.calls[0].tools}
    assert "mcp__time__convert_time" in offered
    assert "mcp__time__get_current_time" not in offered  # not on the allow list
    observation = str(model.calls[1].messages[-1]["content"])
    assert "T21:00:00+09:00" in observation  # the server's real answer
    assert "error" not in observation.lower()


def test_harness_run_uses_the_server_and_reports_the_call(tmp_path: Path) -> None:
    (tmp_path / "author.json").write_text(
        json.dumps(
            [
                CONVERT,
                {"name": "write_file", "arguments": {"path": "answer.txt", "content": "x"}},
                "done",
            ]
        )
    )
    write_loop(tmp_path, TIME_LOOP)
    run = harness("run", "--json", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    calls = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    mcp_calls = [c for c in calls if c["kind"] == "tool_call" and c["name"].startswith("mcp__")]
    assert len(mcp_calls) == 1
    assert mcp_calls[0]["is_error"] is False


def test_a_server_that_cannot_start_is_exit_2_naming_it(tmp_path: Path) -> None:
    (tmp_path / "author.json").write_text(json.dumps(["done"]))
    write_loop(
        tmp_path,
        TIME_LOOP.replace('name = "time"', 'name = "broken"').split("command =")[0]
        + 'command = ["./no-such-mcp-server"]\n',
    )
    run = harness("run", "--quiet", cwd=tmp_path)
    assert run.returncode == 2
    assert "loop.toml: mcp 'broken': could not start" in run.stderr
    assert "no-such-mcp-server" in run.stderr
    assert not (tmp_path / "answer.txt").exists()


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ('name = "a"', "field 'mcp[0]': give either command (stdio) or url"),
        ('name = "a"\ncommand = ["x"]\nurl = "http://127.0.0.1:1/mcp"', "either command"),
        ('name = "a"\nurl = "ftp://x"', "field 'mcp[0].url'"),
        ('name = "a__b"\ncommand = ["x"]', "field 'mcp[0].name'"),
        ('name = "a"\ncommand = []', "field 'mcp[0].command'"),
        ('name = "a"\ncommand = ["x"]\ncall_timeout = 0', "field 'mcp[0].call_timeout'"),
        ('name = "a"\ncommand = ["x"]\ntools = ["y"]', "field 'mcp[0].tools': unknown field"),
        ('name = "a"\nurl = "http://127.0.0.1:1/mcp"\ncwd = "."', "env and cwd apply to a command"),
        (
            'name = "a"\ncommand = ["x"]\n[[mcp]]\nname = "a"\ncommand = ["y"]',
            "field 'mcp[1].name'",
        ),
    ],
)
def test_bad_mcp_entries_name_the_field(tmp_path: Path, entry: str, message: str) -> None:
    write_loop(
        tmp_path, f'goal = "g"\n[[gates]]\ntype = "command"\ncmd = "true"\n[[mcp]]\n{entry}\n'
    )
    with pytest.raises(ConfigError, match=re.escape(message)):
        LoopSpec.from_toml(tmp_path)


def test_env_values_can_name_environment_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = 'goal = "g"\n[[gates]]\ntype = "command"\ncmd = "true"\n[[mcp]]\nname = "a"\n'
    write_loop(
        tmp_path, body + 'command = ["x"]\ncwd = "srv"\nenv = { TOKEN = "Bearer ${MY_TOKEN}" }\n'
    )
    config = LoopSpec.from_toml(tmp_path)
    monkeypatch.delenv("MY_TOKEN", raising=False)
    with pytest.raises(
        ConfigError, match="mcp\\[0\\].env.TOKEN: the environment variable MY_TOKEN is not set"
    ):
        mcp_servers(config)
    monkeypatch.setenv("MY_TOKEN", "s3cret")
    [server] = mcp_servers(config)
    assert server.env == {"TOKEN": "Bearer s3cret"}
    assert server.cwd == config.root / "srv"


def test_attempts_share_the_servers_of_loop_toml(tmp_path: Path) -> None:
    project = make_repo(tmp_path / "project", {"README.md": "hi\n"})
    write = {"name": "write_file", "arguments": {"path": "answer.txt", "content": "21:00"}}
    (project / "author.json").write_text(json.dumps([CONVERT, write, "done"]))
    write_loop(project, TIME_LOOP.replace('isolation = "none"\n', "attempts = 2\n"))
    git(project, "add", "-A")
    git(project, "commit", "-qm", "loop")
    run = harness("run", cwd=project)
    assert run.returncode == 0, run.stderr
    attempts = [line for line in run.stdout.splitlines() if line.startswith("attempt ")]
    assert len(attempts) == 2
    assert all("PASSED" in line for line in attempts)
    calls = [
        json.loads(line)
        for log in (project / ".harness" / "runs").glob("*/events.jsonl")
        for line in log.read_text().splitlines()
        if '"mcp__time__convert_time"' in line
    ]
    calls = [c for c in calls if c["kind"] == "tool_call"]
    assert [c["is_error"] for c in calls] == [False, False]  # one real answer per attempt


COUNTER_SERVER = """
import uuid
from pathlib import Path
from mcp.server.mcpserver import MCPServer

token = uuid.uuid4().hex[:8]
log = Path("mcp.log")


def note(word):
    with log.open("a") as handle:
        handle.write(f"{word} {token}\\n")


app = MCPServer("counter")


@app.tool()
def whoami() -> str:
    \"\"\"This server's token.\"\"\"
    note("call")
    return token


note("start")
app.run()
note("stop")
"""

BATCH_LOOP = f"""\
goal = "out.txt names the server"
model = "scripted:author.json"
max_iterations = 1

[critic]
enabled = false

[[gates]]
type = "command"
name = "named"
cmd = "test -s out.txt"

[sandbox]
backend = "none"  # the servers log in the loop's folder, which a sandbox keeps read-only to them

[[mcp]]
name = "counter"
command = {json.dumps([sys.executable, "counter_server.py"])}
"""


def test_each_batch_task_starts_and_stops_its_own_servers(tmp_path: Path) -> None:
    project = make_repo(tmp_path / "project", {"README.md": "hi\n", ".gitignore": "mcp.log\n"})
    (project / "counter_server.py").write_text(COUNTER_SERVER)
    call = {"name": "mcp__counter__whoami", "arguments": {}}
    write = {"name": "write_file", "arguments": {"path": "out.txt", "content": "asked"}}
    (project / "author.json").write_text(json.dumps([call, write, "done"]))
    write_loop(project, BATCH_LOOP)
    git(project, "add", "-A")
    git(project, "commit", "-qm", "loop")
    lines = [json.dumps({"name": f"task-{i}", "loop": "project/loop.toml"}) for i in (1, 2)]
    (tmp_path / "tasks.jsonl").write_text("\n".join(lines) + "\n")
    run = harness("batch", "tasks.jsonl", "--workers", "2", "--out", "out", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["counts"] == {"passed": 2}
    entries = [line.split() for line in (project / "mcp.log").read_text().splitlines()]
    tokens = sorted({token for _, token in entries})
    assert len(tokens) == 2  # one server per task
    for token in tokens:  # each task called its own server, which stopped with the task
        assert [word for word, t in entries if t == token] == ["start", "call", "stop"]
    answers = [
        json.loads(line)
        for log in (project / ".harness" / "runs").glob("*/events.jsonl")
        for line in log.read_text().splitlines()
        if '"mcp__counter__whoami"' in line
    ]
    assert [a["is_error"] for a in answers if a["kind"] == "tool_call"] == [False, False]
