"""A real program as the round's session: it talks to the gateway over HTTP from inside the
sandbox, with the per-run token, and the outer loop judges what it leaves behind."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from harness import Budget, OuterLoop, PytestGate, ScriptedModel, StopReason, ToolCall
from harness.agent.agent import AgentStop
from harness.agent.config import AGENT_DEFAULTS
from harness.core.errors import ConfigError
from harness.runners.base import RELAY_PORT
from harness.runners.command import CommandRunner
from harness.sandbox import Limits, Sandbox
from harness.sandbox.bwrap import bwrap_problem
from tests.conftest import copy_repo, git, make_repo

pytestmark = pytest.mark.slow

AGENT = Path(__file__).with_name("chat_agent.py")
BUGGY = "def add(a, b):\n    return a - b\n"
WRONG = "def add(a, b):\n    return a * b\n"
RIGHT = "def add(a, b):\n    return a + b\n"
TESTS = "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    files = {"calc.py": BUGGY, "tests/test_calc.py": TESTS}
    return make_repo(tmp_path_factory.mktemp("base") / "repo", files)


@pytest.fixture
def repo(base: Path, tmp_path: Path) -> Path:
    return copy_repo(base, tmp_path / "repo")


def write(text: str) -> ToolCall:
    return ToolCall("write_file", {"path": "calc.py", "content": text})


def test_a_program_fixes_the_bug_in_round_two_with_round_one_s_failure_in_its_task(
    repo: Path, tmp_path: Path
) -> None:
    model = ScriptedModel([write(WRONG), "made add multiply", write(RIGHT), "made add add"])
    runner = CommandRunner(model, [sys.executable, str(AGENT), "{task_file}"])
    loop = OuterLoop(
        "make the tests pass",
        runner,
        gates=[PytestGate("tests")],
        workspace=repo,
        progress=tmp_path / "progress" / "calc.md",
    )
    result = loop.run()
    assert result.stop_reason is StopReason.PASSED
    assert result.iterations == 2
    first, second = result.rounds
    assert not first.passed
    assert (first.agent_stop, first.agent_summary, first.steps) == (
        AgentStop.ANSWERED, "made add multiply", 2,
    )  # fmt: skip
    assert second.agent_summary == "made add add"
    # What the program sent is what the model received: round 2's task holds round 1's failure.
    tasks = [call.messages[0]["content"] for call in model.calls]
    assert len(tasks) == 4
    assert "tests/test_calc.py::test_add" in tasks[2]
    assert "tests/test_calc.py::test_add" not in tasks[0]
    assert "# Goal\nmake the tests pass" in tasks[0]
    assert model.calls[1].messages[-1] == {
        "role": "tool", "tool_call_id": model.calls[1].messages[1]["tool_calls"][0]["id"],
        "content": "written",
    }  # fmt: skip
    # The harness committed each round; the program's work is on the run's branch only.
    assert git(repo, "show", f"{result.branch}:calc.py") + "\n" == RIGHT
    assert git(repo, "show", f"{result.branch}~1:calc.py") + "\n" == WRONG
    assert (repo / "calc.py").read_text() == BUGGY


def test_a_budget_spent_mid_session_ends_it_and_no_request_passes_it(repo: Path) -> None:
    padded = WRONG + "# " + "pad " * 3000 + "\n"  # a reply of some 3,000 tokens
    model = ScriptedModel([write(padded), "never sent"])
    runner = CommandRunner(model, [sys.executable, str(AGENT)])  # the task on stdin
    # Round 1's first request (a task of a few hundred tokens, 4,096 reserved for the reply)
    # fits; its reply, counted, and a second request holding it again cannot.
    loop = OuterLoop(
        "make the tests pass", runner, gates=[PytestGate("tests")], workspace=repo,
        budget=Budget(tokens=4096 + 2000 + 3000),
    )  # fmt: skip
    result = loop.run()
    assert result.stop_reason is StopReason.BUDGET_TOKENS
    assert result.message.startswith("token budget: ")
    assert len(model.calls) == 1  # the second request was refused before reaching the model
    assert 3000 < result.usage.total_tokens < 4096 + 2000 + 3000


def test_a_request_past_the_cap_is_refused_and_ends_the_session_at_its_step_cap(
    repo: Path,
) -> None:
    model = ScriptedModel([write(WRONG), "never sent"])
    runner = CommandRunner(model, [sys.executable, str(AGENT)], max_requests=1)
    loop = OuterLoop(
        "make the tests pass", runner, gates=[PytestGate("tests")], workspace=repo,
        max_iterations=1,
    )  # fmt: skip
    result = loop.run()
    assert result.stop_reason is StopReason.MAX_ITERATIONS
    (only,) = result.rounds
    assert only.agent_stop is AgentStop.MAX_STEPS
    assert only.agent_message == "request cap of 1 model requests reached"
    assert only.steps == 1
    assert len(model.calls) == 1


@pytest.mark.skipif(
    bwrap_problem() is not None, reason="needs the bwrap sandbox (own PID namespace)"
)
def test_the_provider_key_is_in_no_environment_the_agent_can_read(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-provider-" + "k3y" * 8
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    model = ScriptedModel(["looked"])
    runner = CommandRunner(model, [sys.executable, str(AGENT), "--show-env", "seen.txt"])
    session = runner.run("look around", repo)
    assert (session.stop_reason, session.final) == (AgentStop.ANSWERED, "looked")
    environments = (repo / "seen.txt").read_text()
    assert environments.count("OPENAI_API_KEY=harness-") >= 2  # its own, and /proc's
    assert "ANTHROPIC_API_KEY=harness-" in environments
    assert key not in environments
    assert "k3yk3y" not in environments


def test_a_program_that_is_not_there_is_named_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="agent.command: 'no-such-agent-program' is not on PATH"):
        CommandRunner(ScriptedModel([]), ["no-such-agent-program", "--go"])
    with pytest.raises(ConfigError, match="agent.command: must be a non-empty list"):
        CommandRunner(ScriptedModel([]), [])
    with pytest.raises(ConfigError, match="agent.path: .* is not an executable file"):
        CommandRunner(ScriptedModel([]), ["x"], path=tmp_path / "missing")


def test_a_program_failing_is_named_with_its_exit_code_and_last_words(repo: Path) -> None:
    runner = CommandRunner(
        ScriptedModel([]), [sys.executable, "-c", "import sys; sys.exit('cannot go on')"]
    )
    session = runner.run("anything", repo)
    assert session.stop_reason is AgentStop.EXITED
    assert session.stop_message == "the agent exited with code 1: cannot go on"
    assert session.final is None
    assert session.steps == 0


COMMITS = (
    "echo agent > made.txt && git add made.txt && "
    "git -c user.name=a -c user.email=a@b commit -q --no-verify -m 'the agent committed' && "
    "git checkout -q -b elsewhere"
)


def test_what_the_agent_commits_is_left_for_the_harness_to_commit(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": BUGGY})
    before = git(repo, "rev-parse", "HEAD")
    runner = CommandRunner(ScriptedModel([]), ["sh", "-c", COMMITS], sandbox=Sandbox("none"))
    session = runner.run("commit something", repo)
    assert session.stop_reason is AgentStop.ANSWERED
    assert git(repo, "rev-parse", "HEAD") == before
    assert git(repo, "symbolic-ref", "--short", "HEAD") == "main"
    assert git(repo, "log", "--format=%s", "main") == "initial"
    assert (repo / "made.txt").read_text() == "agent\n"
    assert git(repo, "status", "--porcelain") == "A  made.txt"


def test_under_bwrap_the_agent_cannot_commit_at_all(tmp_path: Path) -> None:
    if bwrap_problem() is not None:
        pytest.skip(f"needs the bwrap sandbox: {bwrap_problem()}")
    repo = make_repo(tmp_path / "repo", {"calc.py": BUGGY})
    runner = CommandRunner(ScriptedModel([]), ["sh", "-c", COMMITS])
    session = runner.run("commit something", repo)
    assert session.stop_reason is AgentStop.EXITED  # git add: .git is read-only in the sandbox
    assert git(repo, "log", "--format=%s") == "initial"


def test_a_session_past_its_time_limit_is_killed_and_named(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": BUGGY})
    runner = CommandRunner(ScriptedModel([]), ["sleep", "60"], timeout=1.0)
    started = time.monotonic()
    session = runner.run("wait", repo)
    assert time.monotonic() - started < 10
    assert session.stop_reason is AgentStop.TIMED_OUT
    assert session.stop_message == "the agent ran past its time limit of 1s"


def test_a_session_s_time_limit_is_an_hour_unless_given_and_a_finite_positive_number() -> None:
    model = ScriptedModel([])
    assert CommandRunner(model, ["sleep", "1"]).timeout == AGENT_DEFAULTS.session_timeout == 3600.0
    assert CommandRunner(model, ["sleep", "1"], timeout=0.5).timeout == 0.5
    for bad in (0, -1.0, float("inf"), "soon"):
        with pytest.raises(ConfigError) as caught:
            CommandRunner(model, ["sleep", "1"], timeout=bad)  # type: ignore[arg-type]
        assert str(caught.value) == f"timeout: must be a finite number above 0, got {bad!r}"


def test_the_run_s_time_budget_ends_an_external_session_with_timeout(repo: Path) -> None:
    runner = CommandRunner(ScriptedModel([]), ["sleep", "60"])
    loop = OuterLoop(
        "make the tests pass", runner, gates=[PytestGate("tests")], workspace=repo,
        budget=Budget(seconds=3),
    )  # fmt: skip
    started = time.monotonic()
    result = loop.run()
    assert time.monotonic() - started < 30
    assert result.stop_reason is StopReason.TIMEOUT
    assert result.rounds == []  # cut short in round 1: no round completed


def test_without_a_sandbox_the_gateway_listens_on_a_port_of_127_0_0_1(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": BUGGY})
    model = ScriptedModel([write(RIGHT), "done without a sandbox"])
    runner = CommandRunner(model, [sys.executable, str(AGENT)], sandbox=Sandbox("none"))
    session = runner.run("fix it", repo)
    assert (session.stop_reason, session.final, session.steps) == (
        AgentStop.ANSWERED, "done without a sandbox", 2,
    )  # fmt: skip
    assert (repo / "calc.py").read_text() == RIGHT


@pytest.mark.skipif(bwrap_problem() is not None, reason="needs the bwrap sandbox")
def test_with_the_sandbox_s_network_on_the_gateway_is_reached_on_a_port_of_its_own(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": BUGGY})
    model = ScriptedModel([write(RIGHT), "done with the network on"])
    command = [sys.executable, str(AGENT), "--show-env", "seen.txt"]
    runner = CommandRunner(model, command, sandbox=Sandbox(network=True))
    session = runner.run("fix it", repo)
    assert (session.stop_reason, session.final) == (AgentStop.ANSWERED, "done with the network on")
    (url,) = [line for line in (repo / "seen.txt").read_text().split("\n")
              if line.startswith("OPENAI_BASE_URL=")]  # fmt: skip
    assert url.startswith("OPENAI_BASE_URL=http://127.0.0.1:")
    assert f":{RELAY_PORT}/" not in url  # the host's loopback: the gateway's own free port


@pytest.mark.skipif(bwrap_problem() is not None, reason="needs the bwrap sandbox")
def test_a_program_kept_under_the_host_s_tmp_runs_in_the_session_as_in_its_probe(
    tmp_path: Path,
) -> None:
    """The sandbox's /tmp is its own: the program's folder is shown to the session read-only,
    as to the probe that checked it."""
    repo = make_repo(tmp_path / "repo", {"calc.py": BUGGY})
    agent = tmp_path / "bin" / "agent"
    agent.parent.mkdir()
    agent.write_text("#!/bin/sh\necho found in $(dirname $0)\n")
    agent.chmod(0o755)
    runner = CommandRunner(ScriptedModel([]), [str(agent)], sandbox=Sandbox())

    session = runner.run("go", repo)

    assert str(tmp_path).startswith("/tmp/")
    assert (session.stop_reason, session.final) == (AgentStop.ANSWERED, f"found in {agent.parent}")


def test_the_program_s_folder_is_shown_unless_it_holds_the_home_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / "bin").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))

    def shown(program: Path) -> list[Path]:
        program.write_text("#!/bin/sh\n")
        program.chmod(0o755)
        return CommandRunner(ScriptedModel([]), [str(program)]).own_folder()

    assert shown(home / "bin" / "agent") == [home / "bin"]
    assert shown(tmp_path / "agent") == []  # the home's parent: its secrets stay hidden
    assert shown(home / "agent") == []


def test_an_agent_writing_past_its_output_limit_is_stopped_there(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": BUGGY})
    floods = (
        "import sys, time; sys.stdout.write('x' * (3 << 20)); sys.stdout.flush(); time.sleep(60)"
    )
    runner = CommandRunner(ScriptedModel([]), [sys.executable, "-c", floods],
                           sandbox=Sandbox(limits=Limits(output_mb=1)))  # fmt: skip
    started = time.monotonic()

    session = runner.run("go", repo)

    assert time.monotonic() - started < 30  # not the agent's minute
    assert session.stop_reason is AgentStop.EXITED
    assert session.stop_message == "the agent was stopped: its output passed [sandbox] output_mb"
    assert session.final is None


SWALLOWS = """
import json, os, urllib.request, urllib.error
for _ in range(2):
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "go"}]}).encode()
    request = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", body,
                                     {"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
    try:
        urllib.request.urlopen(request, timeout=30).read()
    except urllib.error.HTTPError:
        pass
print("all fine, says the agent")
"""


def test_an_agent_that_ignores_a_refusal_and_exits_0_still_ends_at_the_cap(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": BUGGY})
    model = ScriptedModel(["one", "never sent"])
    runner = CommandRunner(model, [sys.executable, "-c", SWALLOWS], max_requests=1)
    session = runner.run("go", repo)
    assert session.stop_reason is AgentStop.MAX_STEPS
    assert session.final is None
    assert len(model.calls) == 1
