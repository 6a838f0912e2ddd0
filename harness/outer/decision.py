"""One round's evidence, the feedback it produces, and the outer loop's decision.

Everything here is pure: the outer loop's driver gathers the evidence (agent session, gates,
critic, git) and asks :func:`decide` what to do next. No model, disk or git is needed to test it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from harness.agent.agent import AgentStop
from harness.core.stop import StopReason
from harness.core.usage import Usage
from harness.memory.progress_items import GateSummary
from harness.memory.progress_terms import PROTECTED_CHANGED
from harness.outer.rules import RULES
from harness.verify.critic import Verdict
from harness.verify.gates import GateReport
from harness.verify.human import Approval


@dataclass(frozen=True)
class RoundReport:
    """What one round tried and how it was judged."""

    round: int
    agent_stop: AgentStop
    agent_summary: str | None
    steps: int
    gates: tuple[GateReport, ...]
    verdict: Verdict | None
    usage: Usage
    duration: float
    protected_violations: tuple[str, ...] = ()
    diff_digest: str | None = None
    commit: str | None = None
    critic_required: bool = False
    files_changed: tuple[str, ...] = field(default_factory=tuple)
    approval: Approval | None = None  # a person's answer, asked after the checks passed
    approval_required: bool = False
    agent_message: str = ""  # how the author's session ended, in the agent's words
    restored_edits: tuple[str, ...] = ()  # files where the round undid a person's edit, put back

    @property
    def cause(self) -> str:
        """Why the author's session ended early (step cap, stuck, malformed replies, context
        full), or ``""`` when it finished by answering or submitting."""
        if self.agent_stop in (AgentStop.ANSWERED, AgentStop.SUBMITTED):
            return ""
        return self.agent_message or self.agent_stop.value

    @property
    def failure(self) -> str:
        """The round's outcome and, when its session ended early, why: ``round 3 failed:
        pytest; the session ended early: step cap of 40 reached``."""
        cause = f"; the session ended early: {self.cause}" if self.cause else ""
        return f"round {self.round} {self.outcome}{cause}"

    @property
    def gates_passed(self) -> bool:
        return not self.protected_violations and all(g.passed for g in self.gates)

    @property
    def checks_passed(self) -> bool:
        """The gates and the critic passed; the agent's own claim never counts."""
        if not self.gates_passed:
            return False
        if self.verdict is not None:
            return self.verdict.passed
        return not self.critic_required

    @property
    def passed(self) -> bool:
        """The checks passed, and the person approved where one is asked."""
        approved = self.approval is not None and self.approval.approved
        return self.checks_passed and (not self.approval_required or approved)

    @property
    def failing_tests(self) -> frozenset[str]:
        return frozenset(f for g in self.gates if not g.passed for f in g.failures)

    @property
    def outcome(self) -> str:
        """A short phrase: ``passed``, ``failed: pytest``, ``failed: critic 5.0/10`` ..."""
        if self.passed:
            return "passed"
        if self.protected_violations:
            return PROTECTED_CHANGED
        failed = [g.name for g in self.gates if not g.passed]
        if failed:
            return "failed: " + ", ".join(failed)
        if self.verdict is not None and not self.verdict.passed:
            return f"failed: critic {self.verdict.score:.1f}/10"
        if self.checks_passed and self.approval_required:
            if self.approval is not None and self.approval.outcome == "rejected":
                return "failed: rejected by a person"
            return "failed: not approved in time"
        return "failed: no verdict"


def feedback(report: RoundReport) -> str:
    """The failure report that becomes the next round's input."""
    lines = [f"Round {report.round} did not pass ({report.outcome})."]
    if report.protected_violations:
        lines.append(
            "These protected files were changed, which fails the round whatever the checks say; "
            "restore them and fix the code instead: " + ", ".join(report.protected_violations)
        )
    for gate in report.gates:
        if gate.passed:
            lines.append(f"- Gate {gate.name}: passed")
            continue
        lines.append(f"- Gate {gate.name}: FAILED — {gate.summary}")
        if gate.failures:
            lines.append("  Failing: " + ", ".join(gate.failures))
        if gate.output_tail:
            lines.append("  Relevant output:\n" + _indent(gate.output_tail.strip(), "    "))
    if report.verdict is not None and not report.verdict.passed:
        verdict = report.verdict
        lines.append(f"- Independent review: score {verdict.score:.1f}/10 (not enough to pass)")
        lines.extend(f"  Reason: {reason}" for reason in verdict.reasons)
        lines.extend(f"  Fix: {fix}" for fix in verdict.fixes)
    if report.approval is not None and report.approval.outcome == "rejected":
        lines.append(
            "- The checks passed, but a person reviewed the work and rejected it: "
            + (report.approval.note or "(no note given)")
        )
    if report.restored_edits:
        lines.append(
            "- Your session undid part of a person's edits, which were put back: "
            + ", ".join(report.restored_edits)
            + ". Keep a person's changes."
        )
    if report.agent_stop is AgentStop.MAX_STEPS:
        lines.append("- Your session hit its step cap before finishing; plan fewer, larger steps.")
    if report.agent_stop is AgentStop.STUCK:
        lines.append(
            "- Your session was ended as stuck: it kept repeating a call that gave the same "
            "result, or kept failing. Do not repeat it; take a different approach."
        )
    return "\n".join(lines)


@dataclass(frozen=True)
class Decision:
    """Continue with ``feedback``, or stop for ``reason``."""

    stop: StopReason | None
    message: str = ""


def decide(
    reports: Sequence[RoundReport], *, max_iterations: int, patience: int = RULES.patience
) -> Decision:
    """What the outer loop does after the last of ``reports``."""
    last = reports[-1]
    if last.passed:
        return Decision(StopReason.PASSED, f"round {last.round} passed {_checks_passed(last)}")
    if last.approval is not None and last.approval.outcome == "timed_out":
        return Decision(
            StopReason.TIMEOUT,
            f"round {last.round} passed its checks but no one approved it "
            f"within {last.approval.waited:.0f}s",
        )
    stuck = no_progress(reports, patience)
    if stuck:
        cause = f" ({last.failure})" if last.cause else ""  # the gates alone do not say it
        return Decision(StopReason.NO_PROGRESS, stuck + cause)
    if last.round >= max_iterations:
        return Decision(StopReason.MAX_ITERATIONS, cap_message(last.round, last.failure))
    return Decision(None, feedback(last))


def cap_message(rounds: int, failure: str = "") -> str:
    """Why a loop stopped at its round cap, in rounds (the verdict line names the reason), and
    how its last round failed, when that is known."""
    message = f"no round passed in {rounds} round(s), the round cap"
    return f"{message} ({failure})" if failure else message


def _checks_passed(report: RoundReport) -> str:
    """What a passing round passed, naming only the checks it had: gates, review, a person."""
    checks = ["every gate"] if report.gates else []
    if report.verdict is not None:
        checks.append("the review")
    said = " and ".join(checks) or "its checks"
    return f"{said}; a person approved it" if report.approval is not None else said


def no_progress(reports: Sequence[RoundReport], patience: int) -> str:
    """Why the last ``patience`` rounds count as stuck, or ``""`` when they do not."""
    if len(reports) < patience:
        return ""
    window = reports[-patience:]
    if any(r.passed for r in window):
        return ""
    failing = {r.failing_tests for r in window}
    if len(failing) == 1 and next(iter(failing)):
        tests = ", ".join(sorted(next(iter(failing))))
        return f"the last {patience} rounds failed the same tests: {tests}"
    digests = {r.diff_digest for r in window}
    if len(digests) == 1 and None not in digests:
        return f"the last {patience} rounds left the same diff"
    if digests == {None} and not any(r.files_changed for r in window):
        # Outside git no diff tells whether anything changed: the gates' own words must.
        failures = {_first_failure(r) for r in window}
        only = next(iter(failures))
        if len(failures) == 1 and only is not None:
            return f"the last {patience} rounds failed gate {only[0]!r} with the same output"
    scores = [r.verdict.score for r in window if r.verdict is not None]
    if len(scores) == patience and max(scores[1:]) <= scores[0]:
        return f"the critic's score did not rise over the last {patience} rounds ({scores})"
    return ""


def _first_failure(
    report: RoundReport,
) -> tuple[str, str, tuple[str, ...], str, int | None] | None:
    """The first failing gate's name and what it said, or None when every gate passed."""
    failed = next((g for g in report.gates if not g.passed), None)
    if failed is None:
        return None
    return failed.name, failed.summary, tuple(failed.failures), failed.output_tail, failed.exit_code


def commit_message(report: RoundReport) -> str:
    """The subject of the round's commit: round, gate outcome and critic score."""
    gates = ", ".join(f"{g.name} {'passed' if g.passed else 'failed'}" for g in report.gates)
    score = f"; critic {report.verdict.score:.1f}/10" if report.verdict else ""
    return f"harness: round {report.round}: {report.outcome} ({gates or 'no gates run'}{score})"


def gate_summary(report: GateReport) -> GateSummary:
    """A gate's line in progress.md: name, outcome and the first failing tests."""
    return GateSummary(
        name=report.name, passed=report.passed, detail=", ".join(report.failures[:5])
    )


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in text.splitlines())
