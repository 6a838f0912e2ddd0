"""The hand-over of a live replay: recorded replies while the replay agrees with them, and from
the first call that cannot be answered as recorded, the live models for every role."""

from __future__ import annotations

from harness.core.trajectory_schema import RecordedCall, RecordedReply
from harness.core.usage import Usage
from harness.models.base import Message, ToolCall
from harness.models.handover import CUT_OFF, Handover
from harness.models.replay import Observation, RecordedTurn, ReplayModel
from harness.models.scripted import ScriptedModel

READ = RecordedReply(
    tool_calls=[RecordedCall(id="c1", name="read_file", arguments='{"path": "a"}')]
)
DONE = RecordedReply(content="recorded: done")
VERDICT = RecordedReply(
    tool_calls=[RecordedCall(id="v1", name="verdict", arguments='{"score": 9}')]
)
AGENT_TOOLS = [{"type": "function", "function": {"name": "read_file"}}]
VERDICT_TOOLS = [{"type": "function", "function": {"name": "verdict"}}]
TASK: list[Message] = [{"role": "user", "content": "task"}]


def _replay(*, cut_round: int | None = None, critic: bool = True) -> ReplayModel:
    turns = [
        RecordedTurn("author", READ, Usage(10, 2, calls=1)),
        RecordedTurn("author", DONE, Usage(12, 1, calls=1)),
    ]
    if critic:
        turns.append(RecordedTurn("critic", VERDICT, Usage(8, 3, calls=1)))
    seen = {(1, "c1"): Observation(1, "read_file", "line one")}
    return ReplayModel({1: turns}, seen, name="replay:rec1", cut_round=cut_round)


def _after_read(observation: str) -> list[Message]:
    return [*TASK, {"role": "tool", "tool_call_id": "c1", "content": observation}]


def test_an_unchanged_replay_never_calls_the_live_models() -> None:
    author, critic = ScriptedModel([]), ScriptedModel([])
    handover = Handover(_replay())
    first, second = handover.model(author), handover.model(critic)
    first.begin_round(1)
    second.begin_round(1)  # every role's model begins the round; the recording's cursor stays
    assert first.complete(TASK, AGENT_TOOLS).tool_calls[0].name == "read_file"
    assert first.complete(_after_read("line one"), AGENT_TOOLS).content == "recorded: done"
    assert second.complete(TASK, VERDICT_TOOLS).tool_calls[0].name == "verdict"
    assert handover.takeover is None
    assert (author.calls, critic.calls) == ([], [])
    assert (first.name, second.name) == ("replay:rec1", "replay:rec1")


def test_a_diverging_observation_hands_that_call_and_every_later_one_to_the_live_models() -> None:
    author = ScriptedModel(
        ["live: done"], name="live-author", cost_per_token=(1e-6, 2e-6), context_window=50_000
    )
    critic = ScriptedModel([ToolCall("verdict", {"score": 4})], name="live-critic")
    handover = Handover(_replay())
    first, second = handover.model(author), handover.model(critic)
    first.begin_round(1)
    first.complete(TASK, AGENT_TOOLS)
    assert first.price_per_token() == (1e-6, 2e-6)  # any call may go live: checked at its price
    assert first.context_window == 128_000  # the recording's, while it answers
    reply = first.complete(_after_read("line ONE"), AGENT_TOOLS)
    assert reply.content == "live: done"  # not the recorded "recorded: done"
    assert author.calls[0].messages[-1]["content"] == "line ONE"  # the request as it is now
    takeover = handover.takeover
    assert takeover is not None
    assert (takeover.round, takeover.call) == (1, 2)
    assert takeover.why == "the observation of read_file differs (step 1)"
    assert takeover.divergence is not None
    assert takeover.divergence.now == "line ONE"
    verdict = second.complete(TASK, VERDICT_TOOLS)  # the critic too, though it was recorded
    assert verdict.tool_calls[0].arguments == {"score": 4}
    assert (first.name, second.name) == ("live-author", "live-critic")
    assert first.context_window == 50_000
    assert takeover.describe() == (
        "the live model took over at round 1, model call 2: the observation of read_file "
        "differs (step 1)"
    )


def test_a_call_the_recording_lacks_goes_live() -> None:
    author = ScriptedModel(["live: more"])
    handover = Handover(_replay(critic=False))
    model = handover.model(author)
    model.begin_round(1)
    model.complete(TASK, AGENT_TOOLS)
    model.complete(_after_read("line one"), AGENT_TOOLS)
    assert handover.takeover is None
    assert model.complete(TASK, AGENT_TOOLS).content == "live: more"
    takeover = handover.takeover
    assert takeover is not None
    assert (takeover.round, takeover.call) == (1, 3)
    assert takeover.why == "model call 3 was made; the recording of the round ends after 2"


def test_a_round_the_recording_lacks_goes_live_from_its_first_call() -> None:
    author = ScriptedModel(["live: round two"])
    handover = Handover(_replay())
    model = handover.model(author)
    model.begin_round(2)
    takeover = handover.takeover
    assert takeover is not None
    assert (takeover.round, takeover.call, takeover.why) == (
        2,
        1,
        "the recording has no such round",
    )
    assert model.complete(TASK, AGENT_TOOLS).content == "live: round two"


def test_the_end_of_a_cut_off_recording_goes_live_and_is_no_divergence() -> None:
    author = ScriptedModel(["live: finished"])
    replay = _replay(cut_round=1, critic=False)
    handover = Handover(replay)
    model = handover.model(author)
    model.begin_round(1)
    model.complete(TASK, AGENT_TOOLS)
    model.complete(_after_read("line one"), AGENT_TOOLS)
    assert model.complete(_after_read("line one"), AGENT_TOOLS).content == "live: finished"
    takeover = handover.takeover
    assert takeover is not None
    assert (takeover.round, takeover.call, takeover.why) == (1, 3, CUT_OFF)
    assert takeover.divergence is None
    assert replay.divergences == []
    assert replay.reached_end


def test_one_live_model_for_two_roles_is_one_model() -> None:
    shared = ScriptedModel([])
    handover = Handover(_replay())
    assert handover.model(shared) is handover.model(shared)
    assert handover.model(shared) is not handover.model(ScriptedModel([]))
