"""mini-swe-agent (a real install from PyPI) as the round's session on a real bug, through the
harness's gateway: the loop's model is litellm's against a scripted provider on 127.0.0.1, and
each reply is a call of mini's own ``bash`` tool, which mini runs in the sandbox."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import Budget, OuterLoop, PytestGate, StopReason
from harness.models.litellm_model import LiteLLMModel
from harness.runners.mini_swe_agent import VERSION, MiniSweAgentRunner
from harness.sandbox.bwrap import bwrap_problem
from tests.cli.test_examples import of_kind, read_events
from tests.conftest import git
from tests.openai_server import OpenAIServer, ToolCalls
from tests.runners import realbug
from tests.runners.installed import run_folder, tasks_by_round

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(bwrap_problem() is not None, reason="needs the bwrap sandbox"),
]
SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
SEEN = "seen-environments.txt"
LOOK = f"env > {SEEN}; for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done >> {SEEN}"
"""What an agent's command can read of environments: its own, and every process's in /proc."""
DIFF = "git diff --stat > git-diff.txt"
"""A git command reading the worktree's repository (its git folders shown read-only)."""
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
    tmp_path: Path, program: Path
) -> None:
    with OpenAIServer(deadline=600) as server:
        root = realbug.project(
            tmp_path / "itsdangerous", runner="mini-swe-agent", program=program,
            api_base=server.api_base,
        )  # fmt: skip
        server.queue(
            bash(1, write(realbug.wrong_source(), then=f"{LOOK}; {DIFF}"), "Refusing '-'."),
            submit(2, "refused the dash"),
            bash(3, write(realbug.fixed_source()), "Refusing the whole base64 alphabet."),
            submit(4, "refused the alphabet"),
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
    # what mini sent first in each round, as the trajectory recorded it: round 2's task holds
    # round 1's failure
    assert realbug.GOAL in tasks[1]
    assert "This separator is not allowed." in tasks[2]
    assert "This separator is not allowed." not in tasks[1]
    # the harness committed each round; the fix is on the run's branch, the user's tree untouched
    branch = of_kind(events, "run_start")[0]["branch"]
    assert git(root, "show", f"{branch}:{realbug.SOURCE}") + "\n" == realbug.fixed_source()
    assert git(root, "show", f"{branch}~1:{realbug.SOURCE}") + "\n" == realbug.wrong_source()
    assert (root / realbug.SOURCE).read_text() == realbug.base_source()
    assert git(root, "show", f"{branch}:git-diff.txt").split()[:2] == [realbug.SOURCE, "|"]
    # show, report and replay read the session; the replay re-ran mini on the recorded replies
    # (nothing more reached the provider) and re-verified both rounds
    assert shown.returncode == 0, shown.stderr
    assert "session 1: author (openai/fake-model)" in shown.stdout
    assert "echo 'refused the alphabet'" in shown.stdout
    assert "gate pytest: passed (pytest: 1 passed of 1 tests)" in shown.stdout
    assert report.returncode == 0, report.stderr
    html = (root / "report.html").read_text()
    assert "test_sign_invalid_separator" in html
    assert "refused the dash" in html
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "2 round(s), PASSED" in replay.stdout
    assert "no divergence: every observation, gate, verdict and outcome as recorded" in (
        replay.stdout
    )
    requests = server.requests
    assert len(requests) == 4
    # the provider's key: only in the gateway's own requests' header, in no environment mini
    # read, in nothing the harness wrote
    assert realbug.key_only_in_auth(requests) == []
    seen = git(root, "show", f"{branch}:{SEEN}")
    assert seen.count("OPENAI_API_KEY=harness-") >= 2  # mini's own, and /proc's
    assert "c4n4ry" not in seen
    assert [where for where, text in realbug.written(root).items() if "c4n4ry" in text] == []


def test_a_budget_spent_mid_session_ends_it_and_no_request_passes_it(
    tmp_path: Path, program: Path
) -> None:
    with OpenAIServer(deadline=300) as server:
        root = realbug.project(
            tmp_path / "itsdangerous", runner="mini-swe-agent", program=program,
            api_base=server.api_base,
        )  # fmt: skip
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
