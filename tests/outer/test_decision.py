"""The outer loop's pure decision: hand-built round reports in, a pass, a stop or feedback out."""

from __future__ import annotations

import dataclasses

import pytest

from harness.agent.agent import AgentStop
from harness.core.stop import StopReason
from harness.core.usage import Usage
from harness.memory.progress_items import GateSummary
from harness.outer.decision import (
    RoundReport,
    commit_message,
    decide,
    feedback,
    gate_summary,
    no_progress,
)
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
    assert decision.message == (
        "Loop finished after 3 iteration(s): MAX_ITERATIONS (round 3 failed: pytest)"
    )


@pytest.mark.parametrize(
    ("stop", "message", "cause"),
    [
        (AgentStop.MAX_STEPS, "step cap of 40 reached", "step cap of 40 reached"),
        (
            AgentStop.STUCK,
            "stuck: 4 tool calls in a row failed",
            "stuck: 4 tool calls in a row failed",
        ),
        (AgentStop.CONTEXT_FULL, "", "context_full"),
        (AgentStop.ANSWERED, "the model answered without a tool call", ""),
        (AgentStop.SUBMITTED, "the model called submit", ""),
    ],
)
def test_the_verdict_names_why_the_last_round_failed_its_session_cut_short_included(
    stop: AgentStop, message: str, cause: str
) -> None:
    last = dataclasses.replace(
        report(2, gate(False, ("t::a",)), stop=stop, digest="d2"), agent_message=message
    )
    assert last.cause == cause
    at_cap = decide([failing(1, "t::b"), last], max_iterations=2, patience=5)
    early = f"; the session ended early: {cause}" if cause else ""
    assert at_cap.message == (
        f"Loop finished after 2 iteration(s): MAX_ITERATIONS (round 2 failed: pytest{early})"
    )
    stuck = decide([failing(1, "t::a"), last], max_iterations=5, patience=2)
    assert stuck.stop is StopReason.NO_PROGRESS
    tail = f" (round 2 failed: pytest{early})" if cause else ""
    assert stuck.message == f"the last 2 rounds failed the same tests: t::a{tail}"


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


def test_feedback_reports_a_passing_gate_as_passed_and_only_the_failing_one_as_failed() -> None:
    tail = "  E   assert 1 == 2\nE   where 1 = f()  \n\n"
    last = report(
        3,
        gate(True, ("stale::entry",), name="lint", tail="lint output"),
        gate(False, ("t::a", "t::b"), tail=tail),
        gate(True, name="typecheck"),
    )
    assert feedback(last) == (
        "Round 3 did not pass (failed: pytest).\n"
        "- Gate lint: passed\n"
        "- Gate pytest: FAILED — 2 test(s) failed\n"
        "  Failing: t::a, t::b\n"
        "  Relevant output:\n"
        "    E   assert 1 == 2\n"
        "    E   where 1 = f()\n"
        "- Gate typecheck: passed"
    )
    assert "lint: FAILED" not in feedback(last)
    assert "stale::entry" not in feedback(last)


def test_feedback_of_a_failing_gate_without_tests_or_output_is_one_line() -> None:
    text = feedback(report(1, gate(False, name="lint")))
    assert text == "Round 1 did not pass (failed: lint).\n- Gate lint: FAILED — 0 test(s) failed"


def test_feedback_on_a_review_below_the_threshold_is_exact() -> None:
    judged = report(
        2, gate(True), critic_required=True, stop=AgentStop.MAX_STEPS,
        verdict=verdict(6.25, reasons=("r1", "r2"), fixes=("f1",)),
    )  # fmt: skip
    assert feedback(judged) == (
        "Round 2 did not pass (failed: critic 6.2/10).\n"
        "- Gate pytest: passed\n"
        "- Independent review: score 6.2/10 (not enough to pass)\n"
        "  Reason: r1\n"
        "  Reason: r2\n"
        "  Fix: f1\n"
        "- Your session hit its step cap before finishing; plan fewer, larger steps."
    )


def test_feedback_says_nothing_of_a_review_that_passed_when_a_gate_failed() -> None:
    text = feedback(report(1, gate(False, ("t::a",)), verdict=verdict(9, reasons=("fine",))))
    assert text == (
        "Round 1 did not pass (failed: pytest).\n"
        "- Gate pytest: FAILED — 1 test(s) failed\n"
        "  Failing: t::a"
    )


def test_feedback_on_protected_files_is_exact() -> None:
    cheat = report(5, gate(True), protected=("tests/test_calc.py", "conftest.py"))
    assert feedback(cheat) == (
        "Round 5 did not pass (failed: protected files changed).\n"
        "These protected files were changed, which fails the round whatever the checks say; "
        "restore them and fix the code instead: tests/test_calc.py, conftest.py\n"
        "- Gate pytest: passed"
    )


@pytest.mark.parametrize(
    ("scores", "stuck"),
    [([5, 7, 5], False), ([5, 6, 6], False), ([5, 5, 6], False), ([4, 5, 6], False),
     ([5, 5, 5], True), ([6, 5, 4], True), ([7, 5, 7], True), ([5, 4, 5], True)],
)  # fmt: skip
def test_the_critic_score_must_rise_above_the_first_round_of_the_window(
    scores: list[float], stuck: bool
) -> None:
    reports = [reviewed(n, s) for n, s in enumerate(scores, start=1)]
    expected = (
        f"the critic's score did not rise over the last 3 rounds ({[float(s) for s in scores]})"
    )
    assert no_progress(reports, 3) == (expected if stuck else "")


def test_the_score_rule_looks_at_the_last_patience_rounds_only() -> None:
    reports = [reviewed(1, 9), reviewed(2, 3), reviewed(3, 5), reviewed(4, 4)]
    assert no_progress(reports, 3) == ""  # 3 -> 5 rose; the 9 of round 1 is outside the window
    assert no_progress(reports, 2) == (
        "the critic's score did not rise over the last 2 rounds ([5.0, 4.0])"
    )


def test_a_window_with_an_unreviewed_round_is_not_judged_by_score() -> None:
    reports = [reviewed(1, 5), failing(2, "t::a"), reviewed(3, 4)]
    assert no_progress(reports, 3) == ""


def test_exactly_patience_rounds_are_enough_to_judge() -> None:
    reports = [failing(n, "t::b", "t::a") for n in (1, 2)]
    assert no_progress(reports, 2) == "the last 2 rounds failed the same tests: t::a, t::b"
    assert no_progress(reports[:1], 2) == ""
    same = [report(n, gate(False, name="lint"), digest="d") for n in (1, 2, 3)]
    assert no_progress(same, 3) == "the last 3 rounds left the same diff"


def test_a_window_where_only_some_rounds_have_a_diff_is_not_the_same_diff() -> None:
    reports = [report(n, gate(False, name="lint"), digest=d) for n, d in ((1, "d"), (2, None))]
    assert no_progress(reports, 2) == ""


def test_a_passed_last_round_wins_over_every_other_rule() -> None:
    reports = [failing(1, "t::a", digest="same"), failing(2, "t::a", digest="same"),
               report(3, gate(True), digest="same")]  # fmt: skip
    decision = decide(reports, max_iterations=3, patience=2)
    assert decision == decide(reports, max_iterations=1, patience=3)
    assert decision.stop is StopReason.PASSED
    assert decision.message == "round 3 passed every gate and the review"


def test_no_progress_is_named_before_the_iteration_cap() -> None:
    reports = [failing(n, "t::a") for n in (1, 2, 3)]
    decision = decide(reports, max_iterations=3, patience=3)
    assert decision.stop is StopReason.NO_PROGRESS
    assert decision.message == "the last 3 rounds failed the same tests: t::a"


def test_the_iteration_cap_is_reached_at_its_round_not_before() -> None:
    below = decide([failing(1, "t::a"), failing(2, "t::b")], max_iterations=3)
    assert below == decide([failing(1, "t::a"), failing(2, "t::b")], max_iterations=3)
    assert below.stop is None
    at_cap = decide([failing(1, "t::a"), failing(2, "t::b")], max_iterations=2)
    assert at_cap.stop is StopReason.MAX_ITERATIONS
    assert at_cap.message == (
        "Loop finished after 2 iteration(s): MAX_ITERATIONS (round 2 failed: pytest)"
    )
    past = decide([failing(5, "t::a")], max_iterations=3)  # a resumed run past a lowered cap
    assert past.stop is StopReason.MAX_ITERATIONS


def test_default_patience_is_three() -> None:
    two = [failing(n, "t::a") for n in (1, 2)]
    assert decide(two, max_iterations=10).stop is None
    three = [failing(n, "t::a") for n in (1, 2, 3)]
    assert decide(three, max_iterations=10).stop is StopReason.NO_PROGRESS


@pytest.mark.parametrize(
    ("round_report", "outcome"),
    [
        (report(1, gate(True)), "passed"),
        (report(1, gate(True), verdict=verdict(8)), "passed"),
        (report(1, gate(True), verdict=verdict(9), protected=("a.py",)),
         "failed: protected files changed"),
        (report(1, gate(False, name="lint"), gate(True), gate(False, name="mypy")),
         "failed: lint, mypy"),
        (report(1, gate(True), verdict=verdict(7.96)), "failed: critic 8.0/10"),
        (report(1, gate(True), critic_required=True), "failed: no verdict"),
        (report(1, critic_required=False), "passed"),
    ],
)  # fmt: skip
def test_outcome_names_what_failed_first(round_report: RoundReport, outcome: str) -> None:
    assert round_report.outcome == outcome
    assert round_report.passed is (outcome == "passed")


def test_a_review_decides_a_round_whose_gates_passed_even_when_not_required() -> None:
    assert report(1, gate(True), verdict=verdict(9)).passed
    assert not report(1, gate(True), verdict=verdict(7)).passed
    assert not report(1, gate(False), verdict=verdict(10)).passed
    assert report(1, gate(True), verdict=verdict(9)).gates_passed
    assert not report(1, gate(True), protected=("x",)).gates_passed


def test_failing_tests_come_only_from_gates_that_failed() -> None:
    mixed = report(1, gate(True, ("old::x",)), gate(False, ("t::a", "t::b"), name="unit"),
                   gate(False, ("t::b", "t::c"), name="integration"))  # fmt: skip
    assert mixed.failing_tests == frozenset({"t::a", "t::b", "t::c"})
    assert report(1, gate(True, ("old::x",))).failing_tests == frozenset()


def test_commit_message_names_round_outcome_gates_and_score() -> None:
    passed = report(4, gate(True, name="lint"), gate(True), verdict=verdict(8.5))
    assert commit_message(passed) == (
        "harness: round 4: passed (lint passed, pytest passed; critic 8.5/10)"
    )
    failed = report(2, gate(True, name="lint"), gate(False, ("t::a",)))
    assert commit_message(failed) == (
        "harness: round 2: failed: pytest (lint passed, pytest failed)"
    )
    nothing = report(1, critic_required=True, verdict=verdict(3))
    assert commit_message(nothing) == (
        "harness: round 1: failed: critic 3.0/10 (no gates run; critic 3.0/10)"
    )
    assert commit_message(report(7)) == "harness: round 7: passed (no gates run)"


def test_gate_summary_keeps_the_first_five_failing_tests() -> None:
    many = gate(False, tuple(f"t::{n}" for n in range(1, 8)))
    assert gate_summary(many) == GateSummary(
        name="pytest", passed=False, detail="t::1, t::2, t::3, t::4, t::5"
    )
    assert gate_summary(gate(True, name="lint")) == GateSummary(name="lint", passed=True, detail="")
    five = gate(False, ("a", "b", "c", "d", "e"))
    assert gate_summary(five).detail == "a, b, c, d, e"


def test_a_report_built_without_saying_so_needs_no_critic() -> None:
    plain = RoundReport(
        round=1, agent_stop=AgentStop.ANSWERED, agent_summary=None, steps=1,
        gates=(gate(True),), verdict=None, usage=Usage(), duration=0.0,
    )  # fmt: skip
    assert (plain.critic_required, plain.protected_violations, plain.files_changed) == (
        False, (), (),
    )  # fmt: skip
    assert plain.passed


def test_reports_and_decisions_cannot_be_changed_once_made() -> None:
    made = failing(1, "t::a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.round = 2  # type: ignore[misc]
    decision = decide([made], max_iterations=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        decision.stop = StopReason.PASSED  # type: ignore[misc]
    assert (made.round, decision.stop) == (1, None)


def test_the_next_round_is_told_its_session_was_stuck() -> None:
    stuck = feedback(failing(1, "test_a"))
    assert "stuck" not in stuck
    told = feedback(report(1, gate(False, ("test_a",)), stop=AgentStop.STUCK))
    assert "- Your session was ended as stuck: it kept repeating a call" in told
