"""The critic's settings and what they do to a review: bounds, defaults, criteria, the failure."""

from __future__ import annotations

import re
from typing import Any

import pytest

from harness.core.errors import ConfigError
from harness.core.usage import Usage
from harness.models.base import ModelError, Reply, ToolCall
from harness.models.budget import MeteredModel
from harness.models.provider_errors import ErrorKind
from harness.models.scripted import ScriptedModel
from harness.verify.critic import Critic, CriticError, Verdict
from harness.verify.critic_prompt import CRITIC_ROLE, CRITIC_RULES
from harness.verify.verdict_reply import parse_reply
from tests.conftest import RecordingSink, verdict_call

VERDICT = verdict_call(9, ["fine"])


def test_the_threshold_may_be_anything_from_0_to_10_inclusive() -> None:
    assert Critic(ScriptedModel(), threshold=0).threshold == 0
    assert Critic(ScriptedModel(), threshold=10).threshold == 10
    for outside in (-0.01, 10.01):
        with pytest.raises(
            ConfigError, match=rf"^threshold: must be between 0 and 10, got {outside}$"
        ):
            Critic(ScriptedModel(), threshold=outside)
    strict = Critic(ScriptedModel([verdict_call(10), verdict_call(9.99)]), threshold=10)
    assert strict.review("g", "a").passed is True
    assert strict.review("g", "a").passed is False


def test_max_tokens_is_at_least_1_defaults_to_2000_and_is_sent() -> None:
    model = ScriptedModel([VERDICT, VERDICT])
    Critic(model).review("g", "a")
    Critic(model, max_tokens=1).review("g", "a")
    assert [call.max_tokens for call in model.calls] == [2000, 1]
    with pytest.raises(ConfigError, match="^max_tokens: must be a positive integer, got 0$"):
        Critic(ScriptedModel(), max_tokens=0)


def test_an_empty_goal_is_refused_before_any_call() -> None:
    model = ScriptedModel([VERDICT])
    for goal in ("", " \n"):
        with pytest.raises(ConfigError, match="^goal: empty$"):
            Critic(model).review(goal, "an artifact")
    assert model.calls == []


def test_the_default_criteria_are_sent_as_a_list_and_count_as_not_given() -> None:
    model = ScriptedModel([VERDICT])
    critic = Critic(model)
    critic.review("g", "a")
    assert critic.criteria_given is False
    assert critic.criteria == (
        "- The artifact achieves the goal completely and correctly.\n"
        "- It is clear, consistent and free of errors a careful reviewer would flag."
    )
    assert "Success criteria:\n" + critic.criteria + "\n\n" in model.calls[0].messages[1]["content"]


def test_criteria_given_as_text_are_kept_as_text_and_as_a_list_become_items() -> None:
    text = Critic(ScriptedModel(), criteria="  Every claim has a source.\n")
    assert (text.criteria, text.criteria_given) == ("Every claim has a source.", True)
    items = Critic(ScriptedModel(), criteria=[" one ", "two"])
    assert (items.criteria, items.criteria_given) == ("- one\n- two", True)
    model = ScriptedModel([VERDICT])
    Critic(model).review("g", "a", criteria=["only this"])
    assert "Success criteria:\n- only this\n\n" in model.calls[0].messages[1]["content"]


def test_each_review_fences_the_artifact_with_a_fresh_16_hex_digit_id() -> None:
    model = ScriptedModel([VERDICT, VERDICT])
    critic = Critic(model)
    critic.review("g", "a")
    critic.review("g", "a")
    ids = [
        re.findall(r'<artifact id="([^"]*)">', call.messages[1]["content"]) for call in model.calls
    ]
    assert all(re.fullmatch(r"[0-9a-f]{16}", found[-1]) for found in ids)
    assert ids[0][-1] != ids[1][-1]


def test_a_critic_that_fails_twice_reports_both_calls_and_the_start_of_its_reply() -> None:
    bad = "x" * 150 + "y" * 100
    model = ScriptedModel(["not json", bad])
    with pytest.raises(CriticError) as failure:
        Critic(model, max_tokens=50).review("g", "a")
    first, second = model.calls
    assert failure.value.usage.calls == 2
    assert failure.value.usage.prompt_tokens == (
        model.count_tokens(first.messages, first.tools)
        + model.count_tokens(second.messages, second.tools)
    )
    message = str(failure.value)
    assert message.endswith(f"(reply: {('x' * 150 + 'y' * 50)!r})")
    assert message.startswith("critic scripted: invalid verdict after one repair request: ")


def test_a_verdict_cannot_be_changed_once_given() -> None:
    verdict = Critic(ScriptedModel([VERDICT])).review("g", "a")
    with pytest.raises(ValueError, match="frozen"):
        verdict.passed = False  # type: ignore[misc]
    assert isinstance(verdict, Verdict)
    assert verdict.passed is True


def test_a_score_must_be_a_number_in_range_and_not_a_string() -> None:
    for raw in ('{"score": NaN}', '{"score": Infinity}', '{"score": "9"}', '{"score": 10.5}'):
        for reply in (Reply(raw), Reply(None, (ToolCall("verdict", raw),))):
            with pytest.raises(ValueError, match="score"):
                parse_reply(reply, "0123456789abcdef")
    assert parse_reply(Reply('{"score": 0}'), "0123456789abcdef")[0].score == 0.0
    assert parse_reply(Reply('{"score": 10}'), "0123456789abcdef")[0].reasons == []


def test_usage_of_a_repaired_review_is_both_calls() -> None:
    model = ScriptedModel(["nope", VERDICT])
    verdict = Critic(model).review("g", "a")
    assert verdict.usage.calls == 2
    assert verdict.usage != Usage()


def test_a_critic_for_a_run_asks_its_model_and_tells_its_events_with_the_same_settings() -> None:
    own_model, own_events = ScriptedModel(), RecordingSink()
    critic = Critic(own_model, criteria=["cites sources"], threshold=6.5, max_tokens=300,
                    system_prompt="You judge reports.", events=own_events)  # fmt: skip
    run_model = ScriptedModel([verdict_call(6.5, ["fine"])])
    run_events = RecordingSink()

    twin = critic.for_run(run_model, run_events)
    verdict = twin.review("write the report", "the report", round=4)

    assert (verdict.score, verdict.passed, verdict.threshold) == (6.5, True, 6.5)
    [call] = run_model.calls
    assert call.max_tokens == 300
    assert call.messages[0]["content"] == critic.system_prompt
    assert call.messages[0]["content"].startswith("You judge reports.\n\n")
    assert "Success criteria:\n- cites sources\n\n" in call.messages[1]["content"]
    assert [(kind, fields["round"]) for kind, fields in run_events.events] == [
        ("critic_verdict", 4)
    ]
    # the critic it was copied from is unchanged: its own model, its own events
    assert (critic.model, critic.events) == (own_model, own_events)
    assert (own_model.calls, own_events.events) == ([], [])


def test_a_review_is_a_critic_session_on_its_models_record() -> None:
    sink = RecordingSink()
    model = MeteredModel(ScriptedModel([VERDICT]), role="critic", events=sink)
    Critic(model).review("g", "a")
    kinds = [kind for kind, _ in sink.events]
    assert kinds == ["session_start", "model_call", "session_end"]
    assert sink.events[0][1]["role"] == "critic"


def test_the_notes_of_passing_gates_follow_the_criteria() -> None:
    model = ScriptedModel([VERDICT])
    Critic(model, criteria=["cites sources"]).review("g", "a", notes=["two sources disagree"])
    assert "- cites sources\n\ntwo sources disagree" in model.calls[0].messages[1]["content"]


def test_a_critic_asks_one_model_and_is_given_another_for_a_run() -> None:
    first, second, events = ScriptedModel(), ScriptedModel([VERDICT]), RecordingSink()
    critic = Critic(first, threshold=8)
    assert critic.models == (first,)
    twin = critic.with_models([second], events)
    assert (twin.models, twin.threshold, twin.events) == ((second,), 8, events)
    assert twin.review("g", "a").score == 9
    assert (first.calls, len(second.calls)) == ([], 1)


class _NoTools(ScriptedModel):
    """A model that answers a request offering tools as a bad request."""

    refused = 0

    def complete(self, messages: Any, tools: Any = None, **kwargs: Any) -> Reply:
        if tools:
            self.refused += 1
            raise ModelError("tools are not supported", kind=ErrorKind.BAD_REQUEST)
        return super().complete(messages, tools, **kwargs)


def test_a_model_without_tool_calls_is_asked_again_without_them_and_not_offered_them_again() -> (
    None
):
    tag = re.compile(r"<verdict-([0-9a-f]{16})>")

    def tagged(messages: list[Any], tools: Any) -> str:
        found = tag.findall(messages[-1]["content"])[-1]
        return f'<verdict-{found}>{{"reasons": ["ok"], "score": 8, "fixes": []}}</verdict-{found}>'

    model = _NoTools([tagged, tagged])
    critic = Critic(model)
    assert critic.review("g", "a").score == 8
    assert critic.review("g", "b").score == 8
    assert (model.refused, critic.offer_tool) == (1, False)
    assert [call.tools for call in model.calls] == [[], []]  # the two that were answered


def test_another_kind_of_model_error_is_not_taken_for_a_model_without_tools() -> None:
    class Down(ScriptedModel):
        def complete(self, messages: Any, tools: Any = None, **kwargs: Any) -> Reply:
            raise ModelError("down", kind=ErrorKind.UNREACHABLE)

    critic = Critic(Down())
    with pytest.raises(ModelError, match="down"):
        critic.review("g", "a")
    assert critic.offer_tool


def test_a_panel_member_is_told_its_role_and_its_instructions_before_the_rules() -> None:
    model = ScriptedModel([VERDICT])
    critic = Critic(model, role=" fact checker ", instructions="  Check every number.  ")
    critic.review("g", "a")
    assert critic.role == "fact checker"
    assert model.calls[0].messages[0]["content"] == "\n\n".join(
        [CRITIC_ROLE, "On this review panel you are the fact checker.", "Check every number.",
         CRITIC_RULES]
    )  # fmt: skip
    plain = Critic(ScriptedModel(), instructions="   ")
    assert plain.system_prompt == f"{CRITIC_ROLE}\n\n{CRITIC_RULES}"
