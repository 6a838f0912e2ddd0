"""The round decision where a person approves and where no diff tells whether anything changed."""

from __future__ import annotations

import pytest

from harness.agent.agent import AgentStop
from harness.core.stop import StopReason
from harness.core.usage import Usage
from harness.outer.decision import RoundReport, decide, feedback, no_progress
from harness.verify.critic import Verdict
from harness.verify.gates import GateReport
from harness.verify.human import Approval


def gate(
    passed: bool,
    *,
    name: str = "pytest",
    summary: str = "",
    failures: tuple[str, ...] = (),
    tail: str = "",
    exit_code: int | None = 1,
) -> GateReport:
    return GateReport(
        name=name, passed=passed, summary=summary or ("ok" if passed else "failed"),
        failures=list(failures), output_tail=tail, exit_code=exit_code,
    )  # fmt: skip


def report(
    number: int,
    *gates: GateReport,
    approval: Approval | None = None,
    approval_required: bool = False,
    verdict: Verdict | None = None,
    digest: str | None = None,
    files: tuple[str, ...] = (),
    stop: AgentStop = AgentStop.ANSWERED,
) -> RoundReport:
    return RoundReport(
        round=number, agent_stop=stop, agent_summary=None, steps=1, gates=tuple(gates),
        verdict=verdict, usage=Usage(), duration=0.0, diff_digest=digest, files_changed=files,
        approval=approval, approval_required=approval_required,
    )  # fmt: skip


def review(score: float) -> Verdict:
    return Verdict(score=score, passed=False, reasons=[], fixes=[], threshold=8)


APPROVED = Approval("approved")
REJECTED = Approval("rejected", note="the button is the wrong colour")
TIMED_OUT = Approval("timed_out", waited=59.6)


@pytest.mark.parametrize(
    ("approval", "passed", "outcome"),
    [(None, False, "failed: not approved in time"),
     (APPROVED, True, "passed"),
     (REJECTED, False, "failed: rejected by a person"),
     (TIMED_OUT, False, "failed: not approved in time")],
)  # fmt: skip
def test_where_a_person_is_asked_only_their_approval_passes_a_round(
    approval: Approval | None, passed: bool, outcome: str
) -> None:
    asked = report(1, gate(True), approval=approval, approval_required=True)
    assert asked.checks_passed is True
    assert (asked.passed, asked.outcome) == (passed, outcome)


def test_an_approval_never_passes_a_round_whose_checks_failed() -> None:
    failed = report(1, gate(False), approval=APPROVED, approval_required=True)
    assert (failed.checks_passed, failed.passed, failed.outcome) == (False, False, "failed: pytest")
    unreviewed = RoundReport(
        round=1, agent_stop=AgentStop.ANSWERED, agent_summary=None, steps=1, gates=(gate(True),),
        verdict=None, usage=Usage(), duration=0.0, critic_required=True, approval=APPROVED,
        approval_required=True,
    )  # fmt: skip
    assert (unreviewed.passed, unreviewed.outcome) == (False, "failed: no verdict")


def test_an_approval_not_asked_for_does_not_decide_the_round() -> None:
    assert report(1, gate(True), approval=REJECTED).passed is True
    assert report(1, gate(True)).passed is True


def test_an_approved_round_stops_passed_and_says_a_person_approved_it() -> None:
    decision = decide([report(2, gate(True), approval=APPROVED, approval_required=True)],
                      max_iterations=5)  # fmt: skip
    assert decision.stop is StopReason.PASSED
    assert decision.message == "round 2 passed every gate; a person approved it"
    plain = decide([report(2, gate(True))], max_iterations=5)
    assert plain.message == "round 2 passed every gate"


def test_a_round_no_one_approved_in_time_stops_with_timeout_before_any_other_rule() -> None:
    stalled = [report(n, gate(False, failures=("t::a",)), digest="same") for n in (1, 2)]
    last = report(3, gate(True), approval=TIMED_OUT, approval_required=True)
    decision = decide([*stalled, last], max_iterations=3, patience=2)
    assert decision.stop is StopReason.TIMEOUT
    assert decision.message == "round 3 passed its checks but no one approved it within 60s"


def test_a_rejected_round_continues_with_the_persons_note() -> None:
    last = report(1, gate(True), approval=REJECTED, approval_required=True)
    decision = decide([last], max_iterations=3)
    assert decision.stop is None
    assert decision.message == (
        "Round 1 did not pass (failed: rejected by a person).\n"
        "- Gate pytest: passed\n"
        "- The checks passed, but a person reviewed the work and rejected it: "
        "the button is the wrong colour"
    )
    bare = feedback(report(1, gate(True), approval=Approval("rejected"), approval_required=True))
    assert bare.endswith("rejected it: (no note given)")


def test_feedback_says_nothing_of_a_person_who_approved_or_did_not_answer() -> None:
    for approval in (APPROVED, TIMED_OUT):
        text = feedback(report(1, gate(False), approval=approval, approval_required=True))
        assert text == "Round 1 did not pass (failed: pytest).\n- Gate pytest: FAILED — failed"


def test_the_feedback_on_a_stuck_session_is_exact_and_only_for_a_stuck_session() -> None:
    assert feedback(report(1, gate(False), stop=AgentStop.STUCK)) == (
        "Round 1 did not pass (failed: pytest).\n"
        "- Gate pytest: FAILED — failed\n"
        "- Your session was ended as stuck: it kept repeating a call that gave the same "
        "result, or kept failing. Do not repeat it; take a different approach."
    )
    for stop in (AgentStop.ANSWERED, AgentStop.MAX_STEPS):
        assert "stuck" not in feedback(report(1, gate(False), stop=stop))


def lint_round(number: int, *, tail: str = "E501 line too long", **kwargs: object) -> RoundReport:
    return report(number, gate(True, name="build"),
                  gate(False, name="lint", summary="1 problem", tail=tail), **kwargs)  # type: ignore[arg-type]  # fmt: skip


def test_outside_git_the_same_gate_output_over_patience_rounds_is_no_progress() -> None:
    rounds = [lint_round(n) for n in (1, 2, 3)]
    assert no_progress(rounds, 3) == "the last 3 rounds failed gate 'lint' with the same output"
    decision = decide(rounds, max_iterations=10, patience=3)
    assert decision.stop is StopReason.NO_PROGRESS
    assert no_progress(rounds[1:], 2) == "the last 2 rounds failed gate 'lint' with the same output"


@pytest.mark.parametrize(
    "changed",
    [{"tail": "E501 line too long (90 > 88)"}, {"summary": "2 problems"},
     {"failures": ("x.py",)}, {"exit_code": 2}, {"name": "ruff"}],
)  # fmt: skip
def test_outside_git_any_difference_in_what_the_gate_said_is_progress(
    changed: dict[str, object],
) -> None:
    said = {"name": "lint", "summary": "1 problem", "tail": "E501 line too long", **changed}
    other = report(3, gate(False, **said))  # type: ignore[arg-type]
    assert no_progress([lint_round(1), lint_round(2), other], 3) == ""


def test_outside_git_changed_files_or_a_diff_in_any_round_are_progress() -> None:
    assert no_progress([lint_round(1), lint_round(2, files=("app.py",))], 2) == ""
    assert no_progress([lint_round(1, digest="d1"), lint_round(2)], 2) == ""


def test_outside_git_rounds_whose_gates_all_passed_are_not_the_same_failure() -> None:
    reviewed = [report(n, gate(True), verdict=review(s))
                for n, s in ((1, 5.0), (2, 6.0))]  # fmt: skip
    assert no_progress(reviewed, 2) == ""  # the score rose; no gate failed to compare
    lower = [report(n, gate(True), verdict=review(s))
             for n, s in ((1, 6.0), (2, 5.0))]  # fmt: skip
    assert (
        no_progress(lower, 2)
        == "the critic's score did not rise over the last 2 rounds ([6.0, 5.0])"
    )


def test_outside_git_the_first_failing_gate_is_the_one_compared() -> None:
    first_same = [report(n, gate(False, name="build", tail="same"),
                         gate(False, name="lint", tail=f"line {n}")) for n in (1, 2)]  # fmt: skip
    assert (
        no_progress(first_same, 2) == "the last 2 rounds failed gate 'build' with the same output"
    )
