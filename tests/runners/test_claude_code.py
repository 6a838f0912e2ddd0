"""Claude Code itself (installed from the npm registry) as the round's session, run by `harness
run` inside the sandbox and talking only to the harness's gateway; the loop's model is litellm's
real Anthropic provider pointed at a fake Messages server on 127.0.0.1 whose scripted replies
call Claude Code's own tools (Bash, Read, Edit, Write), which Claude Code runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness import Budget, CommandGate, LiteLLMModel, OuterLoop, StopReason
from harness.runners.claude_code import ClaudeCodeRunner
from tests.anthropic_server import AnthropicServer
from tests.cli.test_cli import harness, harness_here
from tests.conftest import git, make_repo
from tests.openai_server import Text, ToolCalls
from tests.runners.installed import (
    BUGGY,
    FAILING,
    PROBE,
    RIGHT,
    TESTS,
    WRONG,
    buggy_repo,
    program,
    run_folder,
    tasks_by_round,
)

pytestmark = pytest.mark.slow

KEY = "sk-ant-api03-" + "pr0v1der" * 6
SPENT = {"prompt_tokens": 30000, "completion_tokens": 30000}


def call(id_: str, tool: str, **arguments: str) -> ToolCalls:
    return ToolCalls(((id_, tool, json.dumps(arguments)),))


@pytest.fixture
def claude() -> Path:
    return program("claude-code", "claude")


def test_claude_code_fixes_the_bug_in_round_two_through_the_gateway(
    claude: Path, tmp_path: Path
) -> None:
    with AnthropicServer(deadline=200) as server:
        root = buggy_repo(
            tmp_path / "repo", "claude-code", claude, "anthropic/claude-test", server.api_base
        )
        server.queue(
            call("toolu_1", "Bash", command=PROBE, description="Show what the agent can read"),
            call("toolu_2", "Read", file_path="calc.py"),
            call("toolu_3", "Edit", file_path="calc.py", old_string="a - b", new_string="a * b"),
            Text("made add multiply"),
            call("toolu_4", "Read", file_path="calc.py"),
            call("toolu_5", "Write", file_path="calc.py", content=RIGHT),
            call("toolu_6", "Bash", command="git commit -qam mine", description="Commit"),
            Text("made add add"),
        )
        result = harness("run", "loop.toml", cwd=root, env={"ANTHROPIC_API_KEY": KEY})
    assert result.returncode == 0, result.stdout + result.stderr
    assert (root / "calc.py").read_text() == RIGHT  # the branch, checked out in place
    branch = git(root, "branch", "--show-current")
    assert branch.startswith("harness/fix-add.")
    assert git(root, "show", f"{branch}:calc.py") + "\n" == RIGHT
    assert git(root, "show", f"{branch}~1:calc.py") + "\n" == WRONG
    assert git(root, "show", "main:calc.py") + "\n" == BUGGY
    subjects = git(root, "log", "--format=%s", f"main..{branch}").splitlines()
    assert [subject[:16] for subject in subjects] == ["harness: round 2", "harness: round 1"]
    # The agent could read a per-run token in its environment, never the provider's key.
    seen = (root / "environments.txt").read_bytes().decode().replace("\0", "\n")
    tokens = set(re.findall(r"^ANTHROPIC_API_KEY=(harness-\S+)$", seen, re.MULTILINE))
    assert len(tokens) == 1  # its own and /proc's: one token, this session's
    (token,) = tokens
    assert KEY not in seen
    assert "pr0v1der" not in seen
    assert (root / "found.txt").read_text() == ""  # no file it can read holds the key
    # Every request the provider saw is the gateway's own, with the provider's key; the
    # agent's per-run token reached none of them, and the agent's tools are its own.
    assert len(server.requests) == 8
    refused = json.dumps(server.requests[-1].body["messages"][-1])  # its own commit, denied
    assert "Permission to use Bash with command git commit -qam mine has been denied" in refused
    for request in server.requests:
        assert request.headers["x-api-key"] == KEY
        assert token.encode() not in request.raw
        names = {tool["name"] for tool in request.body["tools"]}
        assert names - {"DeferredToolPlaceholder"} == {"Bash", "Edit", "Read", "Write"}
    # Round 2's task, as the agent sent it through the gateway, holds round 1's failure.
    tasks = tasks_by_round(root)
    assert sorted(tasks) == [1, 2]
    assert FAILING in tasks[2]
    assert FAILING not in tasks[1]
    assert "make the tests pass" in tasks[1]
    run = run_folder(root).name
    shown = harness_here("show", run, cwd=root)
    assert shown.returncode == 0, shown.stderr
    assert "made add multiply" in shown.stdout
    assert "a * b" in shown.stdout
    page = tmp_path / "report.html"
    report = harness_here("report", run, "--html", str(page), cwd=root)
    assert report.returncode == 0, report.stderr
    assert "PASSED" in report.stdout
    assert "made add add" in page.read_text()
    replay = harness_here("replay", run, cwd=root)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "no divergence" in replay.stdout


def test_a_budget_spent_mid_session_ends_claude_code_and_no_request_passes_it(
    claude: Path, tmp_path: Path
) -> None:
    root = make_repo(tmp_path / "repo", {"calc.py": BUGGY, "tests/test_calc.py": TESTS})
    with AnthropicServer(deadline=120) as server:
        # the first reply is said to have used the whole budget: no request fits after it
        server.queue(
            ToolCalls((("toolu_1", "Bash", json.dumps({"command": "echo one"})),), **SPENT),
            Text("never"),
        )
        model = LiteLLMModel(
            "anthropic/claude-test",
            api_base=server.api_base,
            api_key=KEY,
            num_retries=0,
            timeout=30,
        )
        loop = OuterLoop(
            "make the tests pass", ClaudeCodeRunner(model, path=claude),
            gates=[CommandGate("python -m pytest -q tests")], workspace=root,
            isolation="branch", max_iterations=1, budget=Budget(tokens=60000),
        )  # fmt: skip
        result = loop.run()
    assert result.stop_reason is StopReason.BUDGET_TOKENS
    assert result.message.startswith("token budget: 60000 used + up to ")
    assert len(server.requests) == 1  # the second request was refused before the provider
    assert result.usage.total_tokens == 60000  # the one reply's, as the provider said
