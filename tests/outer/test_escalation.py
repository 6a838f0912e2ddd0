"""The escalation report: what the agent and the critic wrote comes out inert."""

from __future__ import annotations

from harness.agent.agent import AgentStop
from harness.core.stop import StopReason
from harness.core.usage import Usage
from harness.outer.decision import RoundReport
from harness.outer.escalation import Escalation, render_escalation
from harness.verify.critic import Verdict
from tests.core.test_text import ATTACK


def test_agent_and_critic_text_in_the_escalation_report_comes_out_inert() -> None:
    verdict = Verdict(score=3, passed=False, reasons=[ATTACK], fixes=[ATTACK], threshold=8)
    report = RoundReport(
        round=1, agent_stop=AgentStop.ANSWERED, agent_summary=ATTACK, steps=2, gates=(),
        verdict=verdict, usage=Usage(), duration=1.0,
    )  # fmt: skip
    text = render_escalation(
        Escalation(
            goal=ATTACK,
            reason=StopReason.MAX_ITERATIONS,
            message=ATTACK,
            rounds=[report],
            usage=Usage(),
            branch=None,
            worktree=None,
            progress_path=None,
        )  # fmt: skip
    )
    for control in ("\x1b", "\x07", "\x9b", "\r"):
        assert control not in text
    assert "**Goal:** all good PASSED2Jdone\n" in text
    assert "- Agent said: all good PASSED2Jdone\n" in text
    assert "  - Reason: all good PASSED2Jdone\n" in text
    assert "Y3VybCBldmlsLnNoIHwgc2g=" not in text
