"""The replay model: recorded replies served in order, and every difference in what it is sent."""

from __future__ import annotations

import pytest

from harness.core.errors import ScriptExhausted
from harness.core.trajectory_schema import RecordedCall, RecordedReply
from harness.core.usage import Usage
from harness.models.base import Message
from harness.models.replay import Observation, RecordedTurn, ReplayModel, normalise

READ = RecordedReply(
    tool_calls=[RecordedCall(id="c1", name="read_file", arguments='{"path": "a"}')]
)
DONE = RecordedReply(content="done")
AGENT_TOOLS = [{"type": "function", "function": {"name": "read_file"}}]
VERDICT_TOOLS = [{"type": "function", "function": {"name": "verdict"}}]


def _model() -> ReplayModel:
    turns = {
        1: [
            RecordedTurn("author", READ, Usage(10, 2, 0.5, calls=1)),
            RecordedTurn("author", DONE, Usage(12, 1, 0.25, calls=1)),
        ]
    }
    seen = {(1, "c1"): Observation(1, "read_file", "line one\n3 passed in 0.12s at /old/ws/a")}
    return ReplayModel(turns, seen, folders=["/old/ws", "/new/ws"])


def _after_read(observation: str) -> list[Message]:
    return [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": None, "tool_calls": []},
        {"role": "tool", "tool_call_id": "c1", "content": observation},
    ]


def test_the_recorded_replies_come_back_with_their_ids_and_usage() -> None:
    model = _model()
    model.begin_round(1)
    first = model.complete([{"role": "user", "content": "task"}], AGENT_TOOLS)
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [
        ("c1", "read_file", '{"path": "a"}')
    ]
    assert first.usage == Usage(10, 2, 0.5, calls=1)
    second = model.complete(_after_read("line one\n3 passed in 4.56s at /new/ws/a"), AGENT_TOOLS)
    assert (second.content, second.tool_calls) == ("done", ())
    assert model.divergences == []  # a duration and the run's folder are not differences


def test_an_observation_that_differs_is_a_divergence_at_its_step() -> None:
    model = _model()
    model.begin_round(1)
    model.complete([{"role": "user", "content": "task"}], AGENT_TOOLS)
    model.complete(_after_read("line ONE\n3 passed in 0.12s at /new/ws/a"), AGENT_TOOLS)
    (found,) = model.divergences
    assert (found.round, found.step, found.what) == (1, 1, "the observation of read_file differs")
    assert found.recorded.startswith("line one")
    assert found.now.startswith("line ONE")
    assert found.describe().startswith("round 1, step 1: the observation of read_file differs")


def test_a_call_past_the_recording_and_a_round_it_lacks_are_divergences() -> None:
    model = _model()
    model.begin_round(1)
    for _ in range(2):
        model.complete([{"role": "user", "content": "task"}], AGENT_TOOLS)
    with pytest.raises(ScriptExhausted, match="holds 2 model calls and call 3 was made"):
        model.complete([{"role": "user", "content": "task"}], AGENT_TOOLS)
    assert model.divergences[-1].what == (
        "model call 3 was made; the recording of the round ends after 2"
    )
    with pytest.raises(ScriptExhausted, match="no round 2"):
        model.begin_round(2)
    assert model.divergences[-1].what == "the recording has no such round"


def test_the_critic_asked_where_the_author_was_recorded_is_a_divergence() -> None:
    model = _model()
    model.begin_round(1)
    model.complete([{"role": "user", "content": "judge"}], VERDICT_TOOLS)
    (found,) = model.divergences
    assert found.what == "model call 1 comes from the critic; the recording has the author's"


def test_normalise_takes_out_durations_and_folders_only() -> None:
    text = "47 passed in 3.13s; /a/b/ws/x.py; took 3s; v1.2"
    assert normalise(text, ["/a/b/ws"]) == "47 passed in <t>s; <workspace>/x.py; took 3s; v1.2"
