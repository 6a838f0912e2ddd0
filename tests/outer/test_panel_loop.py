"""A critic panel in the outer loop: every critic's calls metered, splits sent to a person."""

from __future__ import annotations

import io
from pathlib import Path

from harness import Agent, CommandGate, HumanGate, OuterLoop, ScriptedModel, StopReason, ToolCall
from harness.core.event_schema import ApprovalEvent, CriticVerdict, RunStart
from harness.verify.critic import Critic
from harness.verify.panel import CriticPanel, PanelVerdict
from tests.conftest import RecordingSink, make_repo, verdict_call


def say(text: str) -> list[object]:
    return [ToolCall("write_file", {"path": "out.txt", "content": text}), "done"]


def panel_loop(tmp_path: Path, scores: list[tuple[float, float, float]], **panel: object) -> tuple[
    OuterLoop, list[ScriptedModel], RecordingSink
]:  # fmt: skip
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    critics = [
        ScriptedModel([verdict_call(round_scores[i]) for round_scores in scores], name=name)
        for i, name in enumerate(("anthropic/editor", "gemini/checker", "openai/audience"))
    ]
    sink = RecordingSink()
    outer = OuterLoop(
        "out.txt says yes",
        Agent(ScriptedModel([*say("yes"), *say("yes, sourced")], name="openai/author")),
        gates=[CommandGate("grep -q yes out.txt", name="says yes")],
        critic=CriticPanel([Critic(m, threshold=7) for m in critics], spread=3, **panel),  # type: ignore[arg-type]
        workspace=repo,
        progress=tmp_path / "progress" / "answer.md",
        max_iterations=2,
        name="answer",
        events=sink,
    )
    return outer, critics, sink


def test_a_split_pass_goes_to_a_person_and_an_agreed_one_does_not(tmp_path: Path) -> None:
    person = HumanGate(interactive=True, stdin=io.StringIO("n cite the bridge claim\n"),
                       stdout=io.StringIO())  # fmt: skip
    outer, critics, sink = panel_loop(tmp_path, [(4, 9, 9), (8, 8, 9)], referee=person)
    result = outer.run()

    assert result.stop_reason is StopReason.PASSED
    assert result.iterations == 2
    first, second = result.rounds
    assert isinstance(first.verdict, PanelVerdict)
    assert (first.verdict.passed, first.verdict.split) == (True, True)
    assert first.approval is not None
    assert (first.approval.outcome, first.approval.note) == ("rejected", "cite the bridge claim")
    assert not first.passed
    assert second.approval is None  # no split: the panel's pass stands alone
    assert second.passed
    approvals = [e for e in sink.models if isinstance(e, ApprovalEvent)]
    assert [(e.round, e.outcome) for e in approvals] == [(1, "rejected")]
    verdicts = [e for e in sink.models if isinstance(e, CriticVerdict)]
    assert [(e.round, e.score, e.split, len(e.members)) for e in verdicts] == [
        (1, 9, True, 3), (2, 8, False, 3)
    ]  # fmt: skip
    # Every critic was asked each round, through the run's meter.
    assert [len(m.calls) for m in critics] == [2, 2, 2]
    assert result.usage.calls == 4 + 6  # the author's four replies, the critics' six
    [start] = [e for e in sink.models if isinstance(e, RunStart)]
    assert start.critic_model == "anthropic/editor, gemini/checker, openai/audience"


def test_without_a_referee_a_split_is_only_reported(tmp_path: Path) -> None:
    outer, _, sink = panel_loop(tmp_path, [(4, 9, 9)])
    result = outer.run()
    assert result.stop_reason is StopReason.PASSED
    assert result.iterations == 1
    assert result.rounds[0].approval is None
    assert [e for e in sink.models if isinstance(e, ApprovalEvent)] == []
    [verdict] = [e for e in sink.models if isinstance(e, CriticVerdict)]
    assert verdict.split
    assert verdict.reasons[-1] == (
        "the critics disagree: scores anthropic/editor 4, gemini/checker 9, openai/audience 9 "
        "lie 5 points apart"
    )
