"""Best-of-N: parallel attempts on their own branches; the best passing one wins."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import (
    Agent,
    BestOf,
    CommandGate,
    Critic,
    Loop,
    LoopResult,
    OuterLoop,
    ScriptedModel,
    ToolCall,
)
from harness.core.errors import ConfigError
from harness.scale.best_of import Attempt, pick_winner
from tests.conftest import git, make_repo, verdict_call


def _attempts(repo: Path, plan: dict[int, tuple[str, float]]):
    """Attempt n writes plan[n][0] to out.txt and its critic scores it plan[n][1]."""

    def loop_for(number: int) -> OuterLoop:
        answer, score = plan[number]
        author = ScriptedModel(
            [ToolCall("write_file", {"path": "out.txt", "content": answer}), f"wrote {answer}"]
        )
        critic = ScriptedModel([verdict_call(score, ["r"])])
        return OuterLoop(
            "out.txt says yes", Agent(author), gates=[CommandGate("grep -qx yes out.txt")],
            critic=Critic(critic, threshold=5), workspace=repo, progress=repo.parent / "progress" / f"fix-{number}.md", max_iterations=1, name=f"fix-{number}",
        )  # fmt: skip

    return loop_for


def test_the_highest_scoring_passing_attempt_wins_and_the_others_are_kept(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "hi\n"})
    result = BestOf(
        _attempts(repo, {1: ("yes", 6), 2: ("yes", 9), 3: ("yes", 8)}), attempts=3
    ).run()
    assert [a.passed for a in result.attempts] == [True, True, True]
    assert [a.score for a in result.attempts] == [6, 9, 8]
    assert result.winner is not None
    assert result.winner.number == 2
    branches = [a.result.branch for a in result.attempts if a.result]
    assert len(set(branches)) == 3
    for branch in branches:  # every attempt's work stays on its own branch
        assert git(repo, "show", f"{branch}:out.txt") == "yes"
    assert result.usage.total_tokens == sum(a.tokens for a in result.attempts) > 0


def test_the_only_attempt_that_passes_its_gates_wins_whatever_the_scores(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "hi\n"})
    result = BestOf(
        _attempts(repo, {1: ("no", 10), 2: ("yes", 6), 3: ("no", 10)}), attempts=3
    ).run()
    assert [a.passed for a in result.attempts] == [False, True, False]
    assert result.winner is not None
    assert result.winner.number == 2


def test_no_winner_when_nothing_passes_and_a_crashed_attempt_is_recorded(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "hi\n"})
    build = _attempts(repo, {1: ("no", 9), 2: ("no", 9)})

    def loop_for(number: int) -> OuterLoop:
        if number == 3:
            raise ConfigError("model: no model given")
        return build(number)

    result = BestOf(loop_for, attempts=3).run()
    assert result.winner is None
    assert result.attempts[2].result is None
    assert "no model given" in (result.attempts[2].error or "")


def test_ties_go_to_fewer_tokens_then_the_lower_number() -> None:
    from harness.core.stop import StopReason
    from harness.core.usage import Usage
    from harness.outer.result import RunResult

    def attempt(number: int, tokens: int) -> Attempt:
        return Attempt(number, RunResult(StopReason.PASSED, "", [], Usage(tokens, 0)))

    assert pick_winner([attempt(1, 500), attempt(2, 300), attempt(3, 300)]).number == 2  # type: ignore[union-attr]
    assert pick_winner([]) is None


@pytest.mark.parametrize("attempts", [0, 9, True])
def test_attempts_out_of_range_is_a_configuration_error(attempts: int) -> None:
    with pytest.raises(ConfigError, match="attempts"):
        BestOf(lambda n: None, attempts=attempts)  # type: ignore[arg-type,return-value]


class LongLoop:
    """An attempt whose loop plays 100 rounds: three of them pass the engine's default cap."""

    def __init__(self, number: int) -> None:
        self.number = number

    def run(self) -> LoopResult:
        return Loop(lambda ctx: None, until="", max_iterations=100).run()


def test_attempts_are_not_cut_short_by_the_engines_default_body_cap() -> None:
    result = BestOf(LongLoop, attempts=3).run()  # type: ignore[arg-type]
    assert [a.number for a in result.attempts] == [1, 2, 3]
    assert all("loop_round=100" in (a.error or "") for a in result.attempts)
    assert all((a.error or "").startswith("LoopResult(") for a in result.attempts)  # its repr
    assert result.winner is None


def test_the_winner_is_explained_by_the_measure_that_set_it_apart() -> None:
    from harness.core.stop import StopReason
    from harness.core.usage import Usage
    from harness.outer.result import RunResult
    from harness.scale.best_of import why_it_won
    from tests.outer.test_decision import gate, report, verdict

    def attempt(number: int, score: float, tokens: int, passed: bool = True) -> Attempt:
        stop = StopReason.PASSED if passed else StopReason.MAX_ITERATIONS
        rounds = [report(1, gate(True), verdict=verdict(score))]
        return Attempt(number, RunResult(stop, "", rounds, Usage(tokens, 0)))

    def explained(*attempts: Attempt) -> tuple[int, str]:
        winner = pick_winner(attempts)
        assert winner is not None
        return winner.number, why_it_won(attempts, winner)

    assert explained(attempt(1, 9, 900), attempt(2, 9, 900, passed=False)) == (
        1, "the only attempt that passed"
    )  # fmt: skip
    assert explained(attempt(1, 8, 100), attempt(2, 9, 900)) == (2, "the highest score (score 9)")
    assert explained(attempt(1, 9, 1500), attempt(2, 9, 1200), attempt(3, 8, 10)) == (
        2, "tied on score 9 with attempt 1; the fewest tokens (1,200)"
    )  # fmt: skip
    assert explained(attempt(3, 9, 1200), attempt(1, 9, 1200), attempt(2, 9, 1200)) == (
        1, "tied with attempt 2, 3 on every measure (score 9, 1,200 tokens); the lowest-numbered "
        "attempt wins a tie",
    )  # fmt: skip
