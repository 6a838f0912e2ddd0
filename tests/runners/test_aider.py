"""aider (a real install from PyPI) as the round's session on a real bug, through the harness's
gateway: the loop's model is litellm's against a scripted provider on 127.0.0.1, whose replies
are SEARCH/REPLACE blocks that aider's own parser applies."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from harness import Budget, OuterLoop, PytestGate, StopReason
from harness.agent.agent import AgentStop
from harness.models.litellm_model import LiteLLMModel
from harness.runners.aider import VERSION, AiderRunner
from harness.sandbox.bwrap import bwrap_problem
from tests.conftest import git
from tests.openai_server import Behaviour, OpenAIServer, Request, Text
from tests.runners import realbug

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(bwrap_problem() is not None, reason="needs the bwrap sandbox"),
]
WRONG_SAYS = "Refusing the dash."
RIGHT_SAYS = "Refusing every character of the base64 alphabet."
LINT_SAYS = "Those lint errors are in lines this change does not touch; I leave them."
"""The answer to aider's own lint check of the file it edited (flake8 finds Python 2 names)."""
BUDGET_TOKENS = 14_000


class Watching(OpenAIServer):
    """The provider, which also reads, while each request waits for its answer (aider alive,
    waiting on the gateway), the environment of every process of aider's sandbox (each has
    aider's path on its command line: bwrap, the gateway's relay, aider)."""

    def __init__(self, program: Path, **options: float) -> None:
        super().__init__(**options)
        self.program = str(program)
        self.environments: list[str] = []

    def _next(self, request: Request) -> Behaviour | None:
        for proc in Path("/proc").glob("[0-9]*"):
            with contextlib.suppress(OSError):
                command = (proc / "cmdline").read_bytes()
                if self.program.encode() in command:  # bwrap, the relay, aider
                    self.environments.append((proc / "environ").read_bytes().decode())
        return super()._next(request)


@pytest.fixture(scope="module")
def program() -> Path:
    return realbug.agent_program("aider", "aider", f"aider-chat=={VERSION}")


def model(server: OpenAIServer) -> LiteLLMModel:
    return LiteLLMModel(
        "openai/fake-model", api_base=server.api_base, api_key=realbug.PROVIDER_KEY, num_retries=0
    )


def test_a_wrong_fix_fails_and_round_two_fixes_it_with_the_failure_in_its_task(
    tmp_path: Path, program: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", realbug.PROVIDER_KEY)
    root = realbug.project(tmp_path / "itsdangerous", runner="aider", program=program)
    base, wrong, fixed = realbug.base_source(), realbug.wrong_source(), realbug.fixed_source()
    with Watching(program, deadline=300) as server:
        server.queue(
            Text(f"{WRONG_SAYS}\n\n{realbug.search_replace(realbug.SOURCE, base, wrong)}"),
            Text(LINT_SAYS),
            Text(f"{RIGHT_SAYS}\n\n{realbug.search_replace(realbug.SOURCE, wrong, fixed)}"),
            Text(LINT_SAYS),
        )
        runner = AiderRunner(model(server), path=program)
        loop = OuterLoop(
            realbug.GOAL, runner, gates=[PytestGate(realbug.TEST_ID)], workspace=root,
            max_iterations=2, progress=tmp_path / "progress.md",
        )  # fmt: skip
        result = loop.run()
    assert result.stop_reason is StopReason.PASSED, result.message
    first, second = result.rounds
    assert (first.passed, second.passed) == (False, True)
    assert (first.agent_stop, first.steps, first.agent_summary) == (
        AgentStop.ANSWERED, 2, LINT_SAYS,
    )  # fmt: skip
    # aider's first request of each round ends with the task: round 2's holds round 1's failure,
    # and each round's second, aider's lint check of what it edited
    requests = server.requests
    assert len(requests) == 4
    lint = [str(requests[n].body["messages"][-1]["content"]) for n in (1, 3)]
    assert all("# Fix any errors below, if possible." in text for text in lint)
    tasks = [str(requests[n].body["messages"][-1]["content"]) for n in (0, 2)]
    assert all(realbug.GOAL in task for task in tasks)
    assert "This separator is not allowed." in tasks[1]
    assert "This separator is not allowed." not in tasks[0]
    assert not any(request.body.get("stream") for request in requests)  # aider asks for a
    # stream: the gateway answers it as one, having asked the provider for a whole reply
    # the harness committed each round; the fix is on the run's branch, aider's cache is not
    assert git(root, "show", f"{result.branch}:{realbug.SOURCE}") + "\n" == fixed
    assert git(root, "show", f"{result.branch}~1:{realbug.SOURCE}") + "\n" == wrong
    changed = git(root, "diff", "--name-only", "main", result.branch).split()
    assert changed == [realbug.SOURCE]
    assert (root / realbug.SOURCE).read_text() == base
    # the provider's key: only in the gateway's own requests' header, in no environment of
    # aider's sandbox; aider holds the per-run token
    assert realbug.key_only_in_auth(requests) == []
    assert len(server.environments) >= 8  # aider and the relay, at each of the four requests
    assert all("OPENAI_API_KEY=harness-" in env for env in server.environments)
    assert [env for env in server.environments if "c4n4ry" in env] == []


def test_a_budget_spent_mid_session_ends_it_and_no_request_passes_it(
    tmp_path: Path, program: Path
) -> None:
    root = realbug.project(tmp_path / "itsdangerous", runner="aider", program=program)
    with OpenAIServer(deadline=300) as server:
        # The first request (a goal naming no file, aider's repository map: some 7,600 tokens,
        # 4,096 more kept for the reply) fits. Its reply names a file not in the chat: aider
        # adds it and asks again, a request holding the whole file, which the budget cannot hold.
        server.queue(Text("The change belongs in itsdangerous.py."), Text("never sent"))
        runner = AiderRunner(model(server), path=program)
        loop = OuterLoop(
            "Make the failing test pass.", runner, gates=[PytestGate(realbug.TEST_ID)],
            workspace=root, max_iterations=2, budget=Budget(tokens=BUDGET_TOKENS),
        )  # fmt: skip
        result = loop.run()
    assert result.stop_reason is StopReason.BUDGET_TOKENS, result.message
    assert result.message.startswith("token budget: 14 used + up to ")
    assert result.message.endswith(f" for the next call would exceed {BUDGET_TOKENS}")
    assert len(server.requests) == 1
