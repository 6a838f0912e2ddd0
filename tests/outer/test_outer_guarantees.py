"""What the outer loop promises whatever the agent does: only evidence passes a round, the critic
judges with a fresh context, and every bound is checked before the money or time is spent."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from harness import (
    Agent,
    Budget,
    CommandGate,
    Critic,
    OuterLoop,
    ScriptedModel,
    StopReason,
    ToolCall,
)
from harness.agent.agent import AgentStop
from tests.conftest import make_repo, verdict_call

BUGGY = "def add(a, b):\n    return a - b\n"
RIGHT = "def add(a, b):\n    return a + b\n"
ADDS = "from calc import add; assert add(2, 3) == 5, add(2, 3)"
BUDGET_LEFT = re.compile(r"Budget left for the whole run: (\d+) tokens")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"calc.py": BUGGY})


def adds() -> CommandGate:
    """The check the goal names, as a fast command (a pytest run costs seconds to start)."""
    return CommandGate([sys.executable, "-c", ADDS], name="adds")


def fix(content: str = RIGHT) -> ToolCall:
    return ToolCall("write_file", {"path": "calc.py", "content": content})


def verdict(score: float, *fixes: str) -> ToolCall:
    return verdict_call(score, [f"scored {score}"], list(fixes))


def session_tasks(model: ScriptedModel) -> list[str]:
    """The task (first user message) of each session, in order, without repeats."""
    seen: list[str] = []
    for call in model.calls:
        task = call.messages[1]["content"]
        if not seen or seen[-1] != task:
            seen.append(task)
    return seen


# --- (a) only the gates decide ---------------------------------------------------------------


def test_a_session_cut_off_at_its_step_cap_still_passes_when_the_gates_pass(repo: Path) -> None:
    model = ScriptedModel([fix(), ToolCall("run_shell", {"command": "echo still going"})])
    result = OuterLoop(
        "make the tests pass", Agent(model, max_steps=2), gates=[adds()],
        workspace=repo, max_iterations=1,
    ).run()  # fmt: skip
    assert result.stop_reason is StopReason.PASSED
    assert result.rounds[0].agent_stop is AgentStop.MAX_STEPS
    assert result.rounds[0].agent_summary is None  # it never said it was done
    assert len(model.calls) == 2


@pytest.mark.parametrize(
    "claim",
    [
        "All fixed: the tests pass now.",
        ToolCall("submit", {"summary": "Fixed add(); every test passes."}),
    ],
    ids=["answers", "submits"],
)
def test_a_session_that_claims_success_without_a_fix_fails(
    repo: Path, claim: str | ToolCall
) -> None:
    model = ScriptedModel([claim])
    result = OuterLoop(
        "make the tests pass", Agent(model), gates=[adds()], workspace=repo,
        max_iterations=1,
    ).run()  # fmt: skip
    assert result.stop_reason is StopReason.MAX_ITERATIONS
    assert not result.passed
    (only,) = result.rounds
    assert only.agent_stop in (AgentStop.ANSWERED, AgentStop.SUBMITTED)
    assert only.outcome == "failed: adds"
    assert "AssertionError: -1" in only.gates[0].output_tail


def test_a_step_capped_session_that_fixed_nothing_fails_and_is_told_about_the_cap(
    repo: Path,
) -> None:
    busy = [ToolCall("list_files", {}), ToolCall("read_file", {"path": "calc.py"})]
    model = ScriptedModel([*busy, fix(), "done"])
    result = OuterLoop(
        "make the tests pass", Agent(model, max_steps=2), gates=[adds()],
        workspace=repo, max_iterations=2,
    ).run()  # fmt: skip
    assert [r.passed for r in result.rounds] == [False, True]
    assert result.rounds[0].agent_stop is AgentStop.MAX_STEPS
    assert "step cap" in session_tasks(model)[1]


# --- (b) the critic never sees the author's transcript ----------------------------------------


def test_no_critic_request_holds_the_authors_prompt_task_observations_or_answer(
    repo: Path,
) -> None:
    system_prompt = "You are author-7c1e, a meticulous fixer of arithmetic bugs."
    observation = "observed-5b2d9e"  # printed by the shell; the command itself does not hold it
    final = "Finished: author-final-answer-93af."
    author = ScriptedModel([
        ToolCall("run_shell", {"command": "printf 'observed-%s' 5b2d9e"}), fix(), final,
        fix(RIGHT + "# negatives work too\n"), final,
    ])  # fmt: skip
    critic_model = ScriptedModel([verdict(5, "explain negatives"), verdict(9)])
    result = OuterLoop(
        "make the tests pass", Agent(author, system_prompt=system_prompt),
        gates=[adds()], critic=Critic(critic_model, criteria="the change is right"),
        workspace=repo, patience=5, ).run()  # fmt: skip
    assert result.stop_reason is StopReason.PASSED
    assert len(critic_model.calls) == 2
    # The author did read these, so their absence below is the critic's fresh context.
    author_texts = [str(m.get("content")) for c in author.calls for m in c.messages]
    assert any(observation in text for text in author_texts)
    assert author.calls[0].messages[0]["content"] == system_prompt
    tasks = session_tasks(author)
    assert len(tasks) == 2
    assert "explain negatives" in tasks[1]
    secrets = [system_prompt, observation, final, *tasks]
    for call in critic_model.calls:
        assert [m["role"] for m in call.messages] == ["system", "user"]
        for message in call.messages:
            for secret in secrets:
                assert secret not in message["content"]
    assert "return a + b" in critic_model.calls[0].messages[1]["content"]  # the diff is judged


# --- (c) the task states the round and the budget left -----------------------------------------


def test_each_task_states_the_round_and_the_tokens_left(repo: Path) -> None:
    model = ScriptedModel([fix("def add(a, b):\n    return a * b\n"), "tried", fix(), "done"])
    result = OuterLoop(
        "make the tests pass", Agent(model), gates=[adds()], workspace=repo,
        budget=Budget(tokens=200_000), max_iterations=4,
    ).run()  # fmt: skip
    assert result.passed
    first, second = session_tasks(model)
    assert "round 1 of at most 4" in first
    assert "round 2 of at most 4" in second
    left = [int(BUDGET_LEFT.search(task).group(1)) for task in (first, second)]  # type: ignore[union-attr]
    assert left[0] == 200_000
    assert left[1] == 200_000 - result.rounds[0].usage.total_tokens
    assert left[1] < left[0]


# --- (d), (e) bounds are checked before the call -----------------------------------------------


def test_a_call_whose_worst_case_would_cross_the_token_budget_is_never_made(repo: Path) -> None:
    model = ScriptedModel([fix(), "done"])
    result = OuterLoop(
        "make the tests pass", Agent(model, max_tokens=100_000), gates=[adds()],
        workspace=repo, budget=Budget(tokens=50_000),
    ).run()  # fmt: skip
    assert result.stop_reason is StopReason.BUDGET_TOKENS
    assert len(model.calls) == 0
    assert "up to" in result.message
    assert result.usage.total_tokens == 0
    assert result.escalation is not None
    assert "BUDGET_TOKENS" in result.escalation.read_text()


def test_the_same_budget_admits_the_call_when_its_completion_limit_fits(repo: Path) -> None:
    model = ScriptedModel([fix(), "done"])
    result = OuterLoop(
        "make the tests pass", Agent(model, max_tokens=1_000), gates=[adds()],
        workspace=repo, budget=Budget(tokens=50_000),
    ).run()  # fmt: skip
    assert result.stop_reason is StopReason.PASSED
    assert len(model.calls) == 2


def test_the_time_budget_refuses_the_next_call_once_spent(tmp_path: Path) -> None:
    model = ScriptedModel([ToolCall("run_shell", {"command": "sleep 1.5"}), "done", "spare"])
    result = OuterLoop(
        "finish", Agent(model), gates=[CommandGate("true")], workspace=tmp_path,
        isolation="none", budget=Budget(seconds=1),
    ).run()  # fmt: skip
    assert result.stop_reason is StopReason.TIMEOUT
    assert len(model.calls) == 1
    assert model.remaining == 2
    assert result.escalation is not None
    assert "TIMEOUT" in result.escalation.read_text()
