"""mini-swe-agent (a real install from PyPI) as the round's session on a real bug, through the
harness's gateway: the loop's model is litellm's against a scripted provider on 127.0.0.1, and
each reply is a call of mini's own ``bash`` tool, which mini runs in the sandbox."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import Budget, OuterLoop, PytestGate, StopReason
from harness.agent.agent import AgentStop
from harness.models.litellm_model import LiteLLMModel
from harness.runners.mini_swe_agent import VERSION, MiniSweAgentRunner
from harness.sandbox.bwrap import bwrap_problem
from tests.conftest import git
from tests.openai_server import OpenAIServer, ToolCalls
from tests.runners import realbug

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(bwrap_problem() is not None, reason="needs the bwrap sandbox"),
]
SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
SEEN = "seen-environments.txt"
LOOK = f"env > {SEEN}; for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done >> {SEEN}"
"""What an agent's command can read of environments: its own, and every process's in /proc."""
BUDGET_TOKENS = 7_000


@pytest.fixture(scope="module")
def program() -> Path:
    return realbug.agent_program("mini-swe-agent", "mini", f"mini-swe-agent=={VERSION}")


def bash(number: int, command: str, say: str) -> ToolCalls:
    return ToolCalls(((f"call_{number}", "bash", json.dumps({"command": command})),), content=say)


def write(text: str, then: str = "") -> str:
    """A shell command writing ``text`` to the source file, then running ``then``."""
    after = f" && {then}" if then else ""
    return f"cat > {realbug.SOURCE} <<'HARNESS_EOF'{after}\n{text}HARNESS_EOF"


def submit(number: int, summary: str) -> ToolCalls:
    return bash(number, f"echo {SUBMIT}; echo '{summary}'", "Submitting.")


def model(server: OpenAIServer) -> LiteLLMModel:
    return LiteLLMModel(
        "openai/fake-model", api_base=server.api_base, api_key=realbug.PROVIDER_KEY, num_retries=0
    )


def test_a_wrong_fix_fails_and_round_two_fixes_it_with_the_failure_in_its_task(
    tmp_path: Path, program: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", realbug.PROVIDER_KEY)
    root = realbug.project(tmp_path / "itsdangerous", runner="mini-swe-agent", program=program)
    with OpenAIServer(deadline=300) as server:
        server.queue(
            bash(1, write(realbug.wrong_source(), then=LOOK), "Refusing '-'."),
            submit(2, "refused the dash"),
            bash(3, write(realbug.fixed_source()), "Refusing the whole base64 alphabet."),
            submit(4, "refused the alphabet"),
        )
        runner = MiniSweAgentRunner(model(server), path=program)
        loop = OuterLoop(
            realbug.GOAL, runner, gates=[PytestGate(realbug.TEST_ID)], workspace=root,
            max_iterations=2, progress=tmp_path / "progress.md",
        )  # fmt: skip
        result = loop.run()
    assert result.stop_reason is StopReason.PASSED, result.message
    first, second = result.rounds
    assert (first.passed, second.passed) == (False, True)
    assert (first.agent_stop, first.agent_summary, first.steps) == (
        AgentStop.ANSWERED, "refused the dash", 2,
    )  # fmt: skip
    assert second.agent_summary == "refused the alphabet"
    # mini's first request of each round holds the task: round 2's holds round 1's failure
    requests = server.requests
    assert len(requests) == 4
    tasks = [request.body["messages"][1]["content"] for request in (requests[0], requests[2])]
    assert all(realbug.GOAL in task for task in tasks)
    assert "This separator is not allowed." in tasks[1]
    assert "This separator is not allowed." not in tasks[0]
    # the harness committed each round; the fix is on the run's branch, the user's tree untouched
    assert git(root, "show", f"{result.branch}:{realbug.SOURCE}") + "\n" == realbug.fixed_source()
    assert git(root, "show", f"{result.branch}~1:{realbug.SOURCE}") + "\n" == (
        realbug.wrong_source()
    )
    assert (root / realbug.SOURCE).read_text() == realbug.base_source()
    # the provider's key: only in the gateway's own requests' header, in no environment mini read
    assert realbug.key_only_in_auth(requests) == []
    seen = git(root, "show", f"{result.branch}:{SEEN}")
    assert seen.count("OPENAI_API_KEY=harness-") >= 2  # mini's own, and /proc's
    assert realbug.PROVIDER_KEY not in seen
    assert "c4n4ry" not in seen


def test_a_budget_spent_mid_session_ends_it_and_no_request_passes_it(
    tmp_path: Path, program: Path
) -> None:
    root = realbug.project(tmp_path / "itsdangerous", runner="mini-swe-agent", program=program)
    with OpenAIServer(deadline=300) as server:
        # the first request fits; its observation (some 2,500 tokens) makes the second too big
        server.queue(
            bash(1, "python3 -c \"print('word ' * 2000)\"", "Looking."),
            submit(2, "never sent"),
        )
        runner = MiniSweAgentRunner(model(server), path=program)
        loop = OuterLoop(
            realbug.GOAL, runner, gates=[PytestGate(realbug.TEST_ID)], workspace=root,
            max_iterations=2, budget=Budget(tokens=BUDGET_TOKENS),
        )  # fmt: skip
        result = loop.run()
    assert result.stop_reason is StopReason.BUDGET_TOKENS, result.message
    # the one request answered, as the provider counted it (20 + 7), and the next refused
    assert result.message.startswith("token budget: 27 used + up to ")
    assert result.message.endswith(" for the next call would exceed 7000")
    assert len(server.requests) == 1
