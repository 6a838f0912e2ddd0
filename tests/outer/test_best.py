"""The order that names the best round: a pass, gates passed, the critic's score, the earlier."""

from __future__ import annotations

from harness.memory.progress_items import Attempt, GateSummary
from harness.outer.best import RoundMark, best_of, best_round
from harness.verify.gates import GateReport
from tests.outer.test_decision import report


def mark(round_: int, gates: int, score: float | None, *, passed: bool = False) -> RoundMark:
    return RoundMark(round=round_, passed=passed, gates_passed=gates, gates=2, score=score)


def test_gates_come_before_the_critics_score() -> None:
    assert best_round([mark(1, 1, 9.5), mark(2, 2, 3.0)]) == mark(2, 2, 3.0)


def test_a_higher_score_wins_among_equal_gates_and_any_score_beats_none() -> None:
    assert best_round([mark(1, 2, None), mark(2, 2, 0.0), mark(3, 2, 6.0)]) == mark(3, 2, 6.0)
    assert best_round([mark(1, 2, 0.0), mark(2, 2, None)]) == mark(1, 2, 0.0)


def test_a_tie_goes_to_the_earlier_round_and_a_pass_beats_all() -> None:
    assert best_round([mark(1, 2, 7.0), mark(2, 2, 7.0)]) == mark(1, 2, 7.0)
    winner = mark(3, 0, None, passed=True)
    assert best_round([mark(1, 2, 9.9), mark(2, 2, 9.9), winner]) == winner
    assert best_round([]) is None


def test_progress_attempts_read_alike_and_a_protected_change_passes_no_gate() -> None:
    gates = (GateSummary(name="a", passed=True), GateSummary(name="b", passed=True))
    attempts = [
        Attempt(round=1, outcome="failed: critic 5.0/10", gates=gates, critic_score=5.0),
        Attempt(round=2, outcome="failed: protected files changed", gates=gates, critic_score=9),
    ]
    best = best_of(attempts, ())
    assert best == RoundMark(round=1, passed=False, gates_passed=2, gates=2, score=5.0)
    assert best is not None
    assert best.describe() == "round 1 (2/2 gates passed, critic 5.0/10)"
    assert RoundMark.of_attempt(attempts[1]).gates_passed == 0
    # A gate whose name holds "protected" is a gate like any other.
    named = (GateSummary(name="a", passed=True), GateSummary(name="protected_api", passed=False))
    failed_gate = Attempt(round=3, outcome="failed: protected_api", gates=named)
    assert RoundMark.of_attempt(failed_gate).gates_passed == 1


def test_a_live_round_is_a_protected_change_by_its_report_not_by_a_gate_s_name() -> None:
    named = GateReport(name="protected files changed", passed=False, summary="1 failed")
    live = report(2, GateReport(name="a", passed=True, summary="ok"), named)
    assert live.outcome == "failed: protected files changed"  # what a protected change reads
    assert RoundMark.of_report(live).gates_passed == 1
    changed = report(3, GateReport(name="a", passed=True, summary="ok"), protected=("t.py",))
    assert RoundMark.of_report(changed).gates_passed == 0
