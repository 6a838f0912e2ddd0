"""Critic panels: per-criterion scores, aggregation, splits, and what the event log records."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from harness.core.errors import ConfigError, HarnessError
from harness.core.event_schema import CriticVerdict, PanelMember
from harness.memory.skill import Criterion, Skill
from harness.models.base import ToolCall
from harness.models.scripted import ScriptedModel
from harness.verify.critic import Critic
from harness.verify.panel import CriticPanel, PanelVerdict
from harness.verify.verdict_reply import RUBRIC_TOOL
from tests.conftest import RecordingSink, verdict_call

GOAL = "A report whose every claim cites a source."
ARTIFACT = "- The tide turns twice a day. [tables]\n- Bridges sway. (no source)\n"
RUBRIC = (
    Criterion(text="Every claim cites a source.", must_pass=True),
    Criterion(text="It reads clearly.", weight=3),
)


def critic(score: float, *, role: str | None = None, threshold: float = 7) -> Critic:
    return Critic(ScriptedModel([verdict_call(score, [f"scored {score}"])]), threshold=threshold,
                  role=role)  # fmt: skip


def rubric_call(*scores: float, numbers: list[int] | None = None) -> ToolCall:
    entries = [
        {"criterion": number, "reasons": [f"criterion {number} at {score}"], "score": score}
        for number, score in zip(numbers or range(1, len(scores) + 1), scores, strict=True)
    ]
    return ToolCall("verdict", {"criteria": entries, "fixes": ["cite the bridge claim"]})


@pytest.mark.parametrize(
    ("aggregate", "scores", "score", "passed"),
    [
        ("median", (6, 7, 9.6), 7, True),
        ("median", (6, 6.9, 9.6), 6.9, False),
        ("minimum", (7, 8, 9.6), 7, True),
        ("minimum", (6.9, 8, 9.6), 6.9, False),
        ("majority", (3, 7, 7), 7, True),
        ("majority", (3, 6.9, 10), 6.9, False),
    ],
)
def test_the_critics_verdicts_are_combined_as_configured(
    aggregate: str, scores: tuple[float, ...], score: float, passed: bool
) -> None:
    panel = CriticPanel([critic(s) for s in scores], aggregate=aggregate, spread=10)  # type: ignore[arg-type]
    verdict = panel.review(GOAL, ARTIFACT)
    assert isinstance(verdict, PanelVerdict)
    assert (verdict.score, verdict.passed, verdict.aggregate) == (score, passed, aggregate)
    assert [m.score for m in verdict.members] == list(scores)
    assert not verdict.split


def test_critics_far_apart_are_a_split_reported_in_the_verdict_and_the_event() -> None:
    sink = RecordingSink()
    panel = CriticPanel(
        [critic(4, role="editor"), critic(8, role="fact-checker"), critic(9, role="audience")],
        spread=5,
        events=sink,
    )
    verdict = panel.review(GOAL, ARTIFACT, round=2)
    assert (verdict.spread, verdict.split, verdict.score, verdict.passed) == (5, True, 8, True)
    assert verdict.reasons == [
        "editor (4/10): scored 4",
        "fact-checker (8/10): scored 8",
        "audience (9/10): scored 9",
        "the critics disagree: scores editor 4, fact-checker 8, audience 9 lie 5 points apart",
    ]
    [event] = sink.models  # one event for the panel, none per critic
    assert isinstance(event, CriticVerdict)
    assert (event.round, event.score, event.split, event.spread, event.aggregate) == (
        2, 8, True, 5, "median"
    )  # fmt: skip
    assert event.members == [
        PanelMember(critic="editor", score=4, passed=False),
        PanelMember(critic="fact-checker", score=8, passed=True),
        PanelMember(critic="audience", score=9, passed=True),
    ]
    assert event.messages[1]["role"] == "user"
    assert ARTIFACT.strip() in event.messages[1]["content"]


def test_a_spread_just_below_the_setting_is_no_split() -> None:
    panel = CriticPanel([critic(5), critic(7.9)], spread=3)
    assert panel.review(GOAL, ARTIFACT).split is False
    panel = CriticPanel([critic(5), critic(8)], spread=3)
    assert panel.review(GOAL, ARTIFACT).split is True


def test_a_critic_with_a_rubric_scores_each_criterion_reasons_first() -> None:
    model = ScriptedModel([rubric_call(9, 6)])
    verdict = Critic(model, threshold=7, rubric=RUBRIC).review(GOAL, ARTIFACT)
    assert model.calls[0].tools == [RUBRIC_TOOL]
    item = RUBRIC_TOOL["function"]["parameters"]["$defs"]["CriterionReply"]["properties"]
    assert list(item) == ["criterion", "reasons", "score"]
    request = model.calls[0].messages[1]["content"]
    assert "1. Every claim cites a source. (must pass)\n2. It reads clearly. (weight 3)" in request
    assert verdict.score == 6.75  # (9 * 1 + 6 * 3) / 4
    assert not verdict.passed
    assert [(c.text, c.score) for c in verdict.criteria] == [
        ("Every claim cites a source.", 9), ("It reads clearly.", 6)
    ]  # fmt: skip
    assert verdict.reasons == [
        "Every claim cites a source.: criterion 1 at 9",
        "It reads clearly.: criterion 2 at 6",
    ]


def test_a_must_pass_criterion_below_the_threshold_fails_a_high_average() -> None:
    verdict = Critic(ScriptedModel([rubric_call(6, 10)]), threshold=7, rubric=RUBRIC).review(
        GOAL, ARTIFACT
    )
    assert verdict.score == 9.0
    assert not verdict.passed
    assert verdict.reasons[-1] == "must-pass criterion below 7: Every claim cites a source."


def test_a_panel_fails_on_the_median_of_a_must_pass_criterion() -> None:
    critics = [
        Critic(ScriptedModel([rubric_call(s, 10)]), threshold=7, rubric=RUBRIC) for s in (5, 6, 10)
    ]
    verdict = CriticPanel(critics, spread=10).review(GOAL, ARTIFACT)
    assert verdict.score == 9.0  # the median of the critics' own 8.75, 9.0 and 10.0
    assert [c.score for c in verdict.criteria] == [6, 10]
    assert not verdict.passed


def test_a_rubric_reply_that_skips_a_criterion_is_asked_again_then_refused() -> None:
    model = ScriptedModel([rubric_call(9, numbers=[1]), rubric_call(9, 9, numbers=[1, 1])])
    with pytest.raises(HarnessError, match=r"score each of the criteria 1 to 2 exactly once"):
        Critic(model, rubric=RUBRIC).review(GOAL, ARTIFACT)
    assert "score each of the criteria 1 to 2 exactly once (got [1])" in str(
        model.calls[1].messages[-1]["content"]
    )


def test_a_panel_refuses_what_it_cannot_combine() -> None:
    with pytest.raises(ConfigError, match="at least one critic"):
        CriticPanel([])
    with pytest.raises(ConfigError, match=r"share one, got \[7, 8\]"):
        CriticPanel([critic(1, threshold=7), critic(1, threshold=8)])
    with pytest.raises(ConfigError, match="aggregate: expected one of median, minimum, majority"):
        CriticPanel([critic(1)], aggregate="mean")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="spread"):
        CriticPanel([critic(1)], spread=0)


def test_an_empty_artifact_fails_every_critic_without_asking_a_model() -> None:
    models = [ScriptedModel([]), ScriptedModel([])]
    verdict = CriticPanel([Critic(m) for m in models]).review(GOAL, "  ")
    assert (verdict.score, verdict.passed, [m.score for m in verdict.members]) == (0, False, [0, 0])
    assert all(m.calls == [] for m in models)


def test_skill_rubric_items_become_criteria() -> None:
    skill = Skill.parse(
        "# Report\n## Critic rubric\n- must: Every claim cites a source.\n"
        "- Must pass: No invented numbers. (weight 2)\n- It reads clearly. (Weight: 0.5)\n"
        "- Plain item\n"
    )
    assert skill.criteria == (
        Criterion(text="Every claim cites a source.", must_pass=True),
        Criterion(text="No invented numbers.", must_pass=True, weight=2),
        Criterion(text="It reads clearly.", weight=0.5),
        Criterion(text="Plain item"),
    )
    assert Skill.parse("# Report\n").criteria == ()
    assert "- must: Every claim cites a source." in skill.render_for_critic()


@pytest.mark.parametrize(
    ("item", "problem"),
    [("must:", "rubric: text"), ("Clear. (weight 0)", "rubric: weight"),
     ("Clear. (weight 101)", "rubric: weight")],
)  # fmt: skip
def test_a_rubric_item_no_critic_could_score_is_named(item: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=rf"SKILL.md: {problem}"):
        Skill.parse(f"# Report\n## Rubric\n- {item}\n", source="SKILL.md")


def test_a_must_pass_criterion_at_the_threshold_passes_and_the_score_keeps_two_decimals() -> None:
    at = Critic(ScriptedModel([rubric_call(7, 7)]), threshold=7, rubric=RUBRIC).review(
        GOAL, ARTIFACT
    )
    assert (at.score, at.passed) == (7.0, True)
    assert not any(reason.startswith("must-pass") for reason in at.reasons)
    with pytest.raises(ValidationError):  # a scored criterion is part of a verdict given
        at.criteria[0].score = 10  # type: ignore[misc]
    weighed = Critic(ScriptedModel([rubric_call(9, 6.5)]), threshold=7, rubric=RUBRIC).review(
        GOAL, ARTIFACT
    )
    assert (weighed.score, weighed.passed) == (7.12, True)  # (9 + 6.5 * 3) / 4 = 7.125
    under = Critic(ScriptedModel([rubric_call(10, 6)]), threshold=7, rubric=RUBRIC).review(
        GOAL, ARTIFACT
    )
    assert (under.score, under.passed) == (7.0, True)  # the average exactly at the threshold
    just = Critic(ScriptedModel([rubric_call(10, 5.8)]), threshold=7, rubric=RUBRIC).review(
        GOAL, ARTIFACT
    )
    assert (just.score, just.passed) == (6.85, False)  # (10 + 17.4) / 4
