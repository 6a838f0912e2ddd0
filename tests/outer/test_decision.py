"""The outer loop's pure decision: hand-built round reports in, a pass, a stop or feedback out."""

from __future__ import annotations

import pytest

from harness.agent.agent import AgentStop
from harness.core.stop import StopReason
from harness.core.usage import Usage
from harness.outer.decision import RoundReport, decide, feedback, no_progress
from harness.verify.critic import Verdict
from harness.verify.gates import GateReport


def gate(
    passed: bool, failures: tuple[str, ...] = (), *, name: str = "pytest", tail: str = ""
) -> GateReport:
    summary = "all tests passed" if passed else f"{len(failures)} test(s) failed"
    return GateReport(
        name=name, passed=passed, summary=summary, failures=list(failures), output_tail=tail
    )


def verdict(score: float, *, reasons: tuple[str, ...] = (), fixes: tuple[str, ...] = ()) -> Verdict:
    return Verdict(
        score=score, passed=score >= 8, reasons=list(reasons), fixes=list(fixes), threshold=8
    )


def report(
    number: int,
    *gates: GateReport,
    verdict: Verdict | None = None,
    digest: str | None = None,
    stop: AgentStop = AgentStop.ANSWERED,
    protected: tuple[str, ...] = (),
    critic_required: bool = False,
) -> RoundReport:
    return RoundReport(
        round=number,
        agent_stop=stop,
        agent_summary="I fixed it.",
        steps=3,
        gates=tuple(gates),
        verdict=verdict,
        usage=Usage(100, 20, calls=2),
        duration=1.0,
        protected_violations=protected,
        diff_digest=digest,
        critic_required=critic_required,
    )


def failing(number: int, *tests: str, digest: str | None = None) -> RoundReport:
    return report(number, gate(False, tests), digest=digest or f"diff-{number}")


def reviewed(number: int, score: float, *, digest: str | None = None) -> RoundReport:
    return report(
        number, gate(True), verdict=verdict(score), digest=digest or f"diff-{number}",
        critic_required=True,
    )  # fmt: skip


def test_a_round_whose_gates_and_review_pass_stops_with_passed() -> None:
    reports = [failing(1, "t::a"), reviewed(2, 9)]
    decision = decide(reports, max_iterations=10)
    assert decision.stop is StopReason.PASSED
    assert "round 2" in decision.message


def test_gates_alone_pass_a_round_without_a_critic() -> None:
    assert decide([report(1, gate(True))], max_iterations=3).stop is StopReason.PASSED


def test_the_agents_claim_never_passes_a_round() -> None:
    no_evidence = report(1, verdict=None, critic_required=True)  # no gate failed, no verdict
    assert not no_evidence.passed
    assert decide([no_evidence], max_iterations=3).stop is None
    with_protected = report(1, gate(True), protected=("tests/test_calc.py",))
    assert not with_protected.passed
    assert decide([with_protected], max_iterations=1).stop is StopReason.MAX_ITERATIONS


def test_a_failed_round_at_the_cap_stops_with_max_iterations_and_says_so() -> None:
    reports = [failing(1, "t::a"), failing(2, "t::b"), failing(3, "t::c")]
    decision = decide(reports, max_iterations=3, patience=3)
    assert decision.stop is StopReason.MAX_ITERATIONS
    assert decision.message == "Loop finished after 3 iteration(s): MAX_ITERATIONS"


def test_a_failed_round_below_the_cap_continues_with_its_feedback() -> None:
    last = failing(2, "t::b")
    decision = decide([failing(1, "t::a"), last], max_iterations=3)
    assert decision.stop is None
    assert decision.message == feedback(last)


def test_the_same_failing_tests_over_patience_rounds_is_no_progress() -> None:
    reports = [failing(n, "t::a", "t::b") for n in (1, 2, 3)]  # different diffs each round
    reason = no_progress(reports, 3)
    assert "same tests" in reason
    assert "t::a, t::b" in reason
    decision = decide(reports, max_iterations=10, patience=3)
    assert decision.stop is StopReason.NO_PROGRESS
    assert decision.message == reason


def test_the_same_tests_in_only_some_rounds_of_the_window_is_progress() -> None:
    reports = [failing(1, "t::a"), failing(2, "t::a", "t::b"), failing(3, "t::a")]
    assert no_progress(reports, 3) == ""
    assert decide(reports, max_iterations=10, patience=3).stop is None


def test_rounds_that_fail_without_naming_tests_are_not_the_same_failing_tests() -> None:
    lint = [report(n, gate(False, name="lint"), digest=f"d{n}") for n in (1, 2, 3)]
    assert no_progress(lint, 3) == ""


def test_the_same_diff_over_patience_rounds_is_no_progress_even_with_other_tests() -> None:
    reports = [failing(1, "t::a", digest="same"), failing(2, "t::b", digest="same"),
               failing(3, "t::c", digest="same")]  # fmt: skip
    reason = no_progress(reports, 3)
    assert "same diff" in reason
    assert decide(reports, max_iterations=10, patience=3).stop is StopReason.NO_PROGRESS


def test_no_diff_at_all_is_not_the_same_diff() -> None:
    reports = [report(n, gate(False, (f"t::{n}",)), digest=None) for n in (1, 2, 3)]
    assert no_progress(reports, 3) == ""


def test_a_critic_score_that_does_not_rise_is_no_progress() -> None:
    reports = [reviewed(1, 5), reviewed(2, 5), reviewed(3, 4)]
    reason = no_progress(reports, 3)
    assert "score did not rise" in reason
    assert decide(reports, max_iterations=10, patience=3).stop is StopReason.NO_PROGRESS


def test_a_rising_critic_score_continues() -> None:
    reports = [reviewed(1, 5), reviewed(2, 6), reviewed(3, 7)]
    assert no_progress(reports, 3) == ""
    decision = decide(reports, max_iterations=10, patience=3)
    assert decision.stop is None
    assert "score 7.0/10" in decision.message


def test_fewer_rounds_than_patience_never_count_as_stuck() -> None:
    reports = [failing(1, "t::a", digest="same"), failing(2, "t::a", digest="same")]
    assert no_progress(reports, 3) == ""
    assert decide(reports, max_iterations=10, patience=3).stop is None


def test_only_the_last_patience_rounds_are_judged() -> None:
    reports = [failing(1, "t::x"), failing(2, "t::a"), failing(3, "t::a")]
    assert no_progress(reports, 2) != ""
    assert no_progress(reports, 3) == ""


@pytest.mark.parametrize("position", [0, 1])
def test_a_passed_round_inside_the_window_is_not_no_progress(position: int) -> None:
    reports = [failing(n, "t::a", digest="same") for n in (1, 2, 3)]
    assert no_progress(reports, 3) != ""
    reports[position] = report(position + 1, gate(True), digest="same")
    assert no_progress(reports, 3) == ""
    assert decide(reports, max_iterations=10, patience=3).stop is None


def test_feedback_names_failing_tests_output_and_the_step_cap() -> None:
    tail = "E   assert add(2, 3) == 5\nE   +  where -1 = add(2, 3)"
    last = report(
        4, gate(True, name="lint"), gate(False, ("tests/test_calc.py::test_add",), tail=tail),
        stop=AgentStop.MAX_STEPS,
    )  # fmt: skip
    text = feedback(last)
    assert text.startswith("Round 4 did not pass (failed: pytest).")
    assert "- Gate lint: passed" in text
    assert "- Gate pytest: FAILED — 1 test(s) failed" in text
    assert "Failing: tests/test_calc.py::test_add" in text
    assert "    E   assert add(2, 3) == 5" in text  # the tail, indented
    assert "    E   +  where -1 = add(2, 3)" in text
    assert "step cap" in text


def test_feedback_has_no_step_cap_hint_when_the_agent_answered() -> None:
    assert "step cap" not in feedback(failing(1, "t::a"))


def test_feedback_carries_the_critics_reasons_and_fixes() -> None:
    judged = report(
        2, gate(True), critic_required=True,
        verdict=verdict(4.5, reasons=("no test for negatives",), fixes=("add a negative case",)),
    )  # fmt: skip
    text = feedback(judged)
    assert "failed: critic 4.5/10" in text
    assert "score 4.5/10" in text
    assert "Reason: no test for negatives" in text
    assert "Fix: add a negative case" in text


def test_feedback_names_the_protected_files_that_were_changed() -> None:
    cheat = report(1, protected=("tests/test_calc.py", "conftest.py"))
    text = feedback(cheat)
    assert "failed: protected files changed" in text
    assert "tests/test_calc.py, conftest.py" in text
