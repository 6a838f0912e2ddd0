"""aider (a real install from PyPI) as the round's session on a real bug, through the harness's
gateway: the loop's model is litellm's against a scripted provider on 127.0.0.1, whose replies
are SEARCH/REPLACE blocks that aider's own parser applies."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

from harness import Budget, OuterLoop, PytestGate, StopReason
from harness.models.litellm_model import LiteLLMModel
from harness.runners.aider import VERSION, AiderRunner
from harness.sandbox.bwrap import bwrap_problem
from tests.cli.test_examples import of_kind, read_events
from tests.conftest import git
from tests.openai_server import Behaviour, OpenAIServer, Request, Text
from tests.runners import realbug
from tests.runners.installed import run_folder, tasks_by_round

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
    waiting on the gateway), the environment of every process of this test's aider sandbox:
    each has aider's path on its command line (bwrap, the gateway's relay, aider) and works in
    a folder of ``within`` (another run's aider on the machine does not)."""

    def __init__(self, program: Path, within: Path, **options: float) -> None:
        super().__init__(**options)
        self.program = str(program).encode()
        self.within = within
        self.environments: list[str] = []

    def _next(self, request: Request) -> Behaviour | None:
        for proc in Path("/proc").glob("[0-9]*"):
            with contextlib.suppress(OSError):
                ours = Path(os.readlink(proc / "cwd")).is_relative_to(self.within)
                if ours and self.program in (proc / "cmdline").read_bytes():
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
    tmp_path: Path, program: Path
) -> None:
    base, wrong, fixed = realbug.base_source(), realbug.wrong_source(), realbug.fixed_source()
    with Watching(program, tmp_path, deadline=600) as server:
        root = realbug.project(
            tmp_path / "itsdangerous", runner="aider", program=program, api_base=server.api_base
        )
        server.queue(
            Text(f"{WRONG_SAYS}\n\n{realbug.search_replace(realbug.SOURCE, base, wrong)}"),
            Text(LINT_SAYS),
            Text(f"{RIGHT_SAYS}\n\n{realbug.search_replace(realbug.SOURCE, wrong, fixed)}"),
            Text(LINT_SAYS),
        )
        run = realbug.harness("run", cwd=root)
        assert run.returncode == 0, run.stdout + run.stderr
        folder, events, tasks = run_folder(root), read_events(root), tasks_by_round(root)
        shown = realbug.harness("show", folder.name, cwd=root)
        report = realbug.harness("report", folder.name, "--html", "report.html", cwd=root)
        replay = realbug.harness("replay", folder.name, cwd=root)
    assert "PASSED: round 2 passed every gate" in run.stdout
    assert [(g["round"], g["passed"]) for g in of_kind(events, "gate_report")] == [
        (1, False), (2, True),
    ]  # fmt: skip
    # each round: aider's request with the task, then its lint check of what it edited; round
    # 2's task (the trajectory's record of aider's first request) holds round 1's failure
    requests = server.requests
    assert len(requests) == 4  # the replay sent none
    lint = [str(requests[n].body["messages"][-1]["content"]) for n in (1, 3)]
    assert all("# Fix any errors below, if possible." in text for text in lint)
    assert realbug.GOAL in tasks[1]
    assert "This separator is not allowed." in tasks[2]
    assert "This separator is not allowed." not in tasks[1]
    assert not any(request.body.get("stream") for request in requests)  # aider asks for a
    # stream: the gateway answers it as one, having asked the provider for a whole reply
    # the harness committed each round; the fix is on the run's branch, aider's cache is not
    branch = of_kind(events, "run_start")[0]["branch"]
    assert git(root, "show", f"{branch}:{realbug.SOURCE}") + "\n" == fixed
    assert git(root, "show", f"{branch}~1:{realbug.SOURCE}") + "\n" == wrong
    assert git(root, "diff", "--name-only", "main", branch).split() == [realbug.SOURCE]
    assert (root / realbug.SOURCE).read_text() == base
    # show, report and replay read the session; the replay re-ran aider on the recorded
    # replies and re-verified both rounds
    assert shown.returncode == 0, shown.stderr
    assert "session 1: author (openai/fake-model)" in shown.stdout
    assert RIGHT_SAYS in shown.stdout
    assert "gate pytest: passed (pytest: 1 passed of 1 tests)" in shown.stdout
    assert report.returncode == 0, report.stderr
    assert "test_sign_invalid_separator" in (root / "report.html").read_text()
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "2 round(s), PASSED" in replay.stdout
    assert "no divergence: every observation, gate, verdict and outcome as recorded" in (
        replay.stdout
    )
    # the provider's key: only in the gateway's own requests' header, in no environment of
    # aider's sandbox (aider holds the per-run token), in nothing the harness wrote
    assert realbug.key_only_in_auth(requests) == []
    assert len(server.environments) >= 12  # bwrap, the relay and aider, at each request
    assert all("OPENAI_API_KEY=harness-" in env for env in server.environments)
    assert [env for env in server.environments if "c4n4ry" in env] == []
    assert [where for where, text in realbug.written(root).items() if "c4n4ry" in text] == []


def test_a_budget_spent_mid_session_ends_it_and_no_request_passes_it(
    tmp_path: Path, program: Path
) -> None:
    with OpenAIServer(deadline=300) as server:
        root = realbug.project(
            tmp_path / "itsdangerous", runner="aider", program=program, api_base=server.api_base
        )
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
