"""The trajectory: every request rebuilt as sent, observations stored once, torn lines, redaction."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic_core import to_json

from harness.agent.agent import Agent
from harness.agent.subagent import Profile, Subagents
from harness.core.errors import ConfigError
from harness.core.event_schema import (
    BudgetCheck,
    Compaction,
    CriticVerdict,
    GateReportEvent,
    ModelCall,
    RoundEnd,
    RoundStart,
    RunStart,
    SessionStart,
    ToolCallEvent,
    ToolStart,
)
from harness.core.exchange import Exchange
from harness.core.redact import REDACTED, Redactor
from harness.core.trajectory_schema import (
    RECORDS,
    TRAJECTORY_VERSION,
    VERSION_1_KINDS,
    GateStep,
    ModelStep,
    RoundBegin,
    RunBegin,
    SessionBegin,
    ToolStep,
    parse_record,
    record_of,
)
from harness.core.usage import Usage
from harness.models.base import Reply, ToolCall
from harness.models.budget import MeteredModel
from harness.models.scripted import ScriptedModel
from harness.observe import trajectory_log as trajectory_module
from harness.observe.trajectory import BLOBS_DIR, TRAJECTORY_FILE, Trajectory, read_trajectory
from harness.observe.trajectory_export import swe_agent_traj
from harness.observe.trajectory_log import TrajectoryLog
from harness.observe.trajectory_view import entries
from harness.tools import tool

SECRET = "sk-test-9f8e7d6c5b4a39281706fedcba"
BIG = "x" * 5_000  # longer than the inline limit


@tool
def big(part: str) -> str:
    """Return a long text.

    Args:
        part: which text: "same" (always the same) or anything else (holds it).
    """
    return BIG if part == "same" else f"{part}\n{BIG}"


@tool
def leak() -> str:
    """Return a text holding a secret."""
    return f"the key is {SECRET}"


ROUND_1 = RoundStart(round=1, max_iterations=1)


def _session(
    tmp_path: Path, script: list[object], tools: list[object]
) -> tuple[ScriptedModel, Path]:
    redactor = Redactor(env={"OPENAI_API_KEY": SECRET})
    log = TrajectoryLog(tmp_path / "run" / TRAJECTORY_FILE, redactor=redactor)
    scripted = ScriptedModel(script)  # type: ignore[arg-type]
    model = MeteredModel(scripted, redact=redactor.redact_text, events=log)
    log.emit(ROUND_1)
    # the same call again and again is what this file tests: not stuck
    agent = Agent(model, tools, max_steps=50, max_repeats=50)  # type: ignore[arg-type]
    agent.run("do it", tmp_path, events=log)
    return scripted, tmp_path / "run"


def _model_call(
    messages: list[Any],
    *,
    reply: str | None = "ok",
    calls: tuple[ToolCall, ...] = (),
    sent: dict[str, Any] | None = None,
) -> ModelCall:
    """A ``model_call`` event of model ``m``, carrying what was said."""
    said = Reply(reply, calls, Usage(), sent=sent)
    exchange = Exchange(messages, None, None, said)
    return ModelCall(
        role="author", model="m", prompt_tokens=0, completion_tokens=0, exchange=exchange
    )


def test_every_request_is_rebuilt_as_the_model_received_it(tmp_path: Path) -> None:
    script = [ToolCall("big", {"part": f"p{i}"}) for i in range(6)] + ["done"]
    scripted, run = _session(tmp_path, script, [big])
    trajectory = Trajectory.load(run)
    calls = list(trajectory.calls())
    assert len(calls) == len(scripted.calls) == 7
    for call, received in zip(calls, scripted.calls, strict=True):
        assert json.dumps(call.messages) == json.dumps(received.messages)  # byte for byte
        assert call.tools == received.tools
        assert call.step.request.max_tokens == received.max_tokens
    lines = [json.loads(line) for line in (run / TRAJECTORY_FILE).read_text().splitlines()]
    requests = [line["request"] for line in lines if line["kind"] == "model_call"]
    assert [r["keep"] for r in requests] == [0, 2, 4, 6, 8, 10, 12]  # only what is new is kept
    assert all(len(r["messages"]) == 2 for r in requests)
    assert len({r["tools"] for r in requests}) == 1  # the schemas are stored once


def test_a_wire_message_changed_under_the_same_harness_message_is_recorded_again(
    tmp_path: Path,
) -> None:
    """The wire body is the model's own transform of the request: a cache marker moved to the
    newest message, or an empty content dropped, changes an earlier wire message while the
    harness's message list holds the very same objects. The request keeps only the wire
    messages still equal, so each one rebuilds byte for byte."""
    log = TrajectoryLog(tmp_path / TRAJECTORY_FILE)
    log.emit(ROUND_1)
    system = {"role": "system", "content": "be brief"}
    asked = {"role": "user", "content": "first"}
    answered = {"role": "assistant", "content": "", "tool_calls": []}
    again = {"role": "user", "content": "second"}
    marker = {"type": "ephemeral"}
    bodies = [
        {"model": "m", "messages": [system, {**asked, "cache_control": marker}]},
        # the marker moved from the first question to the second; the empty content is dropped
        {
            "model": "m",
            "messages": [system, asked, {"role": "assistant"}, {**again, "cache_control": marker}],
        },
        # nothing changed before the newest message: the whole previous request is kept
        {
            "model": "m",
            "messages": [system, asked, {"role": "assistant"}, {**again, "cache_control": marker},
                         {"role": "user", "content": "third"}],
        },
    ]  # fmt: skip
    harness_side = [[system, asked], [system, asked, answered, again]]
    harness_side.append([*harness_side[1], {"role": "user", "content": "third"}])
    for messages, body in zip(harness_side, bodies, strict=True):
        # new objects on the wire at every call, as litellm's
        log.emit(_model_call(messages, sent=copy.deepcopy(body)))
    calls = list(Trajectory.load(tmp_path).calls())
    assert [c.step.request.keep for c in calls] == [0, 1, 4]
    assert [json.dumps(c.messages) for c in calls] == [json.dumps(b["messages"]) for b in bodies]
    assert [c.body() for c in calls] == bodies


def test_an_option_equal_in_python_but_not_on_the_wire_is_recorded_as_sent(
    tmp_path: Path,
) -> None:
    """``1``, ``1.0`` and ``true`` are equal in Python; the rest of the body is kept as its
    bytes on the wire were, each call's own."""
    log = TrajectoryLog(tmp_path / TRAJECTORY_FILE)
    log.emit(ROUND_1)
    message = {"role": "user", "content": "hi"}
    for temperature in (1, 1.0, True, 1):
        body = {"model": "m", "messages": [message], "temperature": temperature}
        log.emit(_model_call([message], sent=body))
    sent = [json.dumps(c.body()["temperature"]) for c in Trajectory.load(tmp_path).calls()]
    assert sent == ["1", "1.0", "true", "1"]


def test_the_kept_messages_are_the_previous_requests_still_there() -> None:
    a, b, c, d = ({"role": "user", "content": x} for x in "abcd")
    previous: list[dict[str, object]] = []
    assert trajectory_module._follow(previous, [a, b]) == 0
    assert trajectory_module._follow(previous, [a, b, c]) == 2  # a step added
    assert trajectory_module._follow(previous, [a, dict(b), c, d]) == 3  # an equal copy is kept
    assert trajectory_module._follow(previous, [a, {**b, "content": "B"}, c, d]) == 1  # changed
    assert trajectory_module._follow(previous, [a, d]) == 1  # shorter: compacted
    assert trajectory_module._follow(previous, [a, d]) == 2
    request = [a, d, b]
    assert trajectory_module._follow(previous, request) == 2
    assert previous == request
    assert previous is not request  # a copy: the caller's list is its own
    request.append(c)
    assert trajectory_module._follow(previous, [a, d, b]) == 3  # the copy did not change


def test_records_carry_version_round_and_session(tmp_path: Path) -> None:
    _, run = _session(tmp_path, [ToolCall("big", {"part": "same"}), "done"], [big])
    records = read_trajectory(run / TRAJECTORY_FILE)
    assert [r.kind for r in records] == [
        "round_start",
        "session_start",
        "model_call",
        "tool_call",
        "model_call",
    ]
    assert all(r.v == TRAJECTORY_VERSION and r.round == 1 for r in records)
    assert [r.session for r in records] == [None, 1, 1, 1, 1]
    (session,) = [r for r in records if isinstance(r, SessionBegin)]
    assert (session.role, session.model) == ("author", "scripted")
    (step,) = [r for r in records if isinstance(r, ToolStep)]
    assert (step.step, step.name, step.arguments) == (1, "big", '{"part": "same"}')
    assert Trajectory.load(run).text(step.observation) == BIG
    reply = [r for r in records if isinstance(r, ModelStep)][-1].reply
    assert (reply.content, reply.tool_calls) == ("done", [])


def test_a_repeated_long_observation_is_stored_once(tmp_path: Path) -> None:
    script = [ToolCall("big", {"part": "same"}) for _ in range(20)] + ["done"]
    _, run = _session(tmp_path, script, [big])
    blobs = sorted(p.name for p in (run / BLOBS_DIR).iterdir())
    assert len(blobs) == 2  # the observation and the tool schemas, each once
    size = (run / TRAJECTORY_FILE).stat().st_size
    assert size < 20 * len(BIG)  # neither the observation nor the history is repeated inline
    assert BIG not in (run / TRAJECTORY_FILE).read_text()


def test_a_subagent_has_its_own_session_and_the_parent_gets_its_own_back(tmp_path: Path) -> None:
    """Steps inside the child are the child's session; the parent's steps after it returns are
    the parent's again, and every request of both is rebuilt as its model received it."""
    child = ScriptedModel(  # type: ignore[arg-type]
        [ToolCall("big", {"part": "c1"}), ToolCall("big", {"part": "c2"}), "child done"],
        name="child-model",
    )
    parent = ScriptedModel(  # type: ignore[arg-type]
        [
            ToolCall("big", {"part": "p1"}),
            ToolCall("subagent", {"task": "look", "profile": "helper"}),
            ToolCall("big", {"part": "p2"}),
            ToolCall("big", {"part": "p3"}),
            "parent done",
        ],
        name="parent-model",
    )
    redactor = Redactor()
    log = TrajectoryLog(tmp_path / "run" / TRAJECTORY_FILE, redactor=redactor)
    model = MeteredModel(parent, redact=redactor.redact_text, events=log)
    log.emit(ROUND_1)
    helper = Profile(model=child, tools=("big",), max_steps=5)
    agent = Agent(model, [big], max_steps=10, subagents=Subagents(profiles={"helper": helper}))
    assert agent.run("do it", tmp_path, events=log).final == "parent done"
    records = read_trajectory(tmp_path / "run" / TRAJECTORY_FILE)
    stamped = [
        (r.kind, r.session, r.model if isinstance(r, ModelStep) else getattr(r, "name", None))
        for r in records
        if not isinstance(r, RoundBegin)
    ]
    assert stamped == [
        ("session_start", 1, None),
        ("model_call", 1, "parent-model"),
        ("tool_call", 1, "big"),
        ("model_call", 1, "parent-model"),
        ("session_start", 2, None),
        ("model_call", 2, "child-model"),
        ("tool_call", 2, "big"),
        ("model_call", 2, "child-model"),
        ("tool_call", 2, "big"),
        ("model_call", 2, "child-model"),
        ("tool_call", 1, "subagent"),
        ("model_call", 1, "parent-model"),
        ("tool_call", 1, "big"),
        ("model_call", 1, "parent-model"),
        ("tool_call", 1, "big"),
        ("model_call", 1, "parent-model"),
    ]
    calls = list(Trajectory.load(tmp_path / "run").calls())
    by_model = {"parent-model": parent.calls, "child-model": child.calls}
    for name, received in by_model.items():
        rebuilt = [c.messages for c in calls if c.step.model == name]
        assert json.dumps(rebuilt) == json.dumps([r.messages for r in received])
    parent_requests = [c.step.request for c in calls if c.step.model == "parent-model"]
    assert [r.keep for r in parent_requests] == [0, 2, 4, 6, 8]  # no full request after the child


def test_the_trajectory_writes_only_the_moments_it_keeps(tmp_path: Path) -> None:
    """Events the trajectory does not keep, and a call reported without what was said (a model
    call or a tool call), write nothing: not even the file."""
    log = TrajectoryLog(tmp_path / TRAJECTORY_FILE)
    log.emit(ToolStart(name="big", step=1))
    log.emit(Compaction(strategy="mask", tokens_before=10, tokens_after=5))
    log.emit(BudgetCheck(role="author", estimated_tokens=10, reason="over"))
    log.emit(ModelCall(role="author", model="m", prompt_tokens=1, completion_tokens=1))
    log.emit(ToolCallEvent(name="big", step=1, call_id="c1"))
    assert not (tmp_path / TRAJECTORY_FILE).exists()
    log.emit(ToolCallEvent(name="big", step=1, call_id="c1", observation="seen"))
    (step,) = read_trajectory(tmp_path / TRAJECTORY_FILE)
    assert isinstance(step, ToolStep)
    assert (step.kind, step.observation, step.step) == ("tool_call", "seen", 1)


def test_each_recorded_kind_of_event_gives_its_record_every_field_of_its_own() -> None:
    """A record of its own (:data:`RECORDS`) takes its fields from its event by name: every field
    of the record (but the session the writer stamps) is one of the event's, and the record has
    the event's kind, so no field is left at its default by a name that differs."""
    assert set(RECORDS) == {RunStart, RoundStart, SessionStart, GateReportEvent, CriticVerdict,
                            RoundEnd}  # fmt: skip
    for event, record in RECORDS.items():
        own = set(record.model_fields) - {"kind", "v", "session", "round"}
        assert own <= set(event.model_fields), (record, own - set(event.model_fields))
        assert record.model_fields["kind"].default == event.model_fields["kind"].default


def test_a_record_of_its_own_holds_its_event_and_other_events_have_none() -> None:
    gate = GateReportEvent(round=2, name="pytest", passed=False, summary="1 failed",
                           failures=["test_a"], duration=1.5, output_tail="E assert 1 == 2")  # fmt: skip
    record = record_of(gate)
    assert isinstance(record, GateStep)
    assert record.model_dump(exclude={"v", "session"}) == gate.model_dump(
        include={"kind", "ts", "round", "name", "passed", "summary", "failures"}
    ) | {"output_tail": "E assert 1 == 2"}
    run = RunStart(goal="g", model="m", max_iterations=3, run_id="r1", workspace="/w",
                   base="abc1234", folder="a", context_window=1000)  # fmt: skip
    start = record_of(run)
    assert isinstance(start, RunBegin)
    expected = ("run_start", "r1", "g", "/w", "abc1234", "a", 1000, None)
    assert (start.kind, start.run_id, start.goal, start.workspace, start.base, start.folder,
            start.context_window, start.round) == expected  # fmt: skip
    assert record_of(ToolStart(name="big", step=1)) is None
    assert (
        record_of(ModelCall(role="author", model="m", prompt_tokens=1, completion_tokens=1)) is None
    )


def test_each_long_text_is_scanned_and_hashed_once_and_no_blob_is_synced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An observation goes into its step, then into the next request: the run's one redactor
    scans it once, and the trajectory hashes it once; the tool schemas, sent at every step, are
    hashed once; blobs are not fsynced (the lines that name them are not either)."""
    scanned: Counter[str] = Counter()
    scan = Redactor._scan

    def counting_scan(self: Redactor, text: str) -> str:
        scanned[text] += 1
        return scan(self, text)

    hashed: list[str] = []
    sha256 = trajectory_module._sha256

    def counting_sha256(text: str) -> str:
        hashed.append(text)
        return sha256(text)

    synced: list[int] = []
    monkeypatch.setattr(Redactor, "_scan", counting_scan)
    monkeypatch.setattr(trajectory_module, "_sha256", counting_sha256)
    monkeypatch.setattr(os, "fsync", synced.append)
    script = [ToolCall("big", {"part": f"p{i}"}) for i in range(4)]
    _, run = _session(tmp_path, [*script, *script, "done"], [big])  # each text comes twice
    observations = [f"p{i}\n{BIG}" for i in range(4)]
    assert [scanned[text] for text in observations] == [1, 1, 1, 1]
    assert sorted(hashed[1:]) == observations  # after the schemas, each observation once
    assert len(list((run / BLOBS_DIR).iterdir())) == 5
    assert synced == []
    steps = [r for r in read_trajectory(run / TRAJECTORY_FILE) if isinstance(r, ToolStep)]
    assert [Trajectory.load(run).text(s.observation) for s in steps] == observations * 2


def test_every_line_is_its_record_as_the_schema_writes_it(tmp_path: Path) -> None:
    """The writer's lines hold exactly the schema's fields: parsed and written again by the
    schema's own models, each is the same."""
    script = [ToolCall("big", {"part": "p"}), ToolCall("leak", {}), "done"]
    _, run = _session(tmp_path, script, [big, leak])
    lines = (run / TRAJECTORY_FILE).read_text().splitlines()
    assert len(lines) == 7
    for line in lines:
        assert json.loads(line) == parse_record(line).model_dump(mode="json")


@pytest.mark.parametrize(
    "value",
    [
        datetime(2026, 3, 1, 12, 30, 5, 123456, tzinfo=UTC),
        datetime(2026, 3, 1, 12, 30, 5, tzinfo=UTC),  # no microseconds: none written
        Usage(1200, 30, 0.00042, 1, 0, 512),  # a dataclass
        RoundBegin(round=2, head="abc"),  # a model, which orjson does not know
        Path("/a/b"),
        {"text": 'é ü \u2028 "quoted" \\ \n\t\x01', "none": None, "no": False, "f": 0.1},
        [1.5e-7, 3.0, -2, 10**18, "x" * 3000],
        2**70,  # past 64 bits: orjson refuses, pydantic-core writes it
        {1: "a key that is not a string"},
    ],
)
def test_a_line_is_the_bytes_pydantic_core_would_write(value: object) -> None:
    data = {"kind": "tool_call", "v": TRAJECTORY_VERSION, "value": value}
    line = trajectory_module._line(data)
    assert line == to_json(data) + b"\n"
    assert line.count(b"\n") == 1


def test_secrets_are_redacted_in_lines_and_blobs(tmp_path: Path) -> None:
    script = [ToolCall("leak", {}), ToolCall("big", {"part": SECRET}), "done"]
    _, run = _session(tmp_path, script, [leak, big])
    written = (run / TRAJECTORY_FILE).read_text()
    written += "".join(p.read_text() for p in (run / BLOBS_DIR).iterdir())
    assert SECRET not in written
    assert f"the key is {REDACTED}" in written
    calls = list(Trajectory.load(run).calls())
    assert calls[1].messages[-1]["content"] == f"the key is {REDACTED}"


def test_each_tool_step_holds_its_own_arguments_redacted(tmp_path: Path) -> None:
    """A tool step takes the arguments redacted with the reply that made its call, unless they
    differ: two calls of one reply under one id, and a step of a call no reply made."""
    log = TrajectoryLog(tmp_path / TRAJECTORY_FILE, redactor=Redactor(env={"A_TOKEN": SECRET}))
    log.emit(ROUND_1)
    escaped = SECRET.replace("-", "\\u002d")
    first, second = f'{{"a": "{escaped}"}}', '{"b": "plain"}'
    calls = (ToolCall("t", first, id="c1"), ToolCall("t", second, id="c1"))
    log.emit(_model_call([{"role": "user", "content": "go"}], reply=None, calls=calls))
    for call_id, arguments in (("c1", first), ("c1", second), ("c9", first)):
        log.emit(
            ToolCallEvent(name="t", arguments_preview=arguments, exit_code=0, step=1,
                          call_id=call_id, observation="ok")
        )  # fmt: skip
    model_step, *tool_steps = read_trajectory(tmp_path / TRAJECTORY_FILE)[1:]
    assert isinstance(model_step, ModelStep)
    expected = ['{"a": "[REDACTED]"}', second]
    assert [c.arguments for c in model_step.reply.tool_calls] == expected
    assert [s.arguments for s in tool_steps if isinstance(s, ToolStep)] == [*expected, expected[0]]


@pytest.mark.parametrize(("old", "kind"), sorted(VERSION_1_KINDS.items()))
def test_a_version_1_record_reads_under_its_kind_today_and_only_in_version_1(
    old: str, kind: str
) -> None:
    fields = {
        "run": {"run_id": "r1", "goal": "g", "workspace": "/w"},
        "round": {"round": 1},
        "session": {"role": "author", "model": "m"},
        "gate": {"name": "pytest", "passed": True},
        "verdict": {"score": 9, "passed": True, "threshold": 8},
    }[old]
    line = json.dumps({"kind": old, "v": 1, "ts": "2026-03-01T09:30:00Z", **fields})
    record = parse_record(line)
    assert record.kind == kind
    assert record.v == 1
    assert parse_record(line.replace(f'"{old}"', f'"{kind}"', 1)).kind == kind  # as written since
    with pytest.raises(ValueError, match="kind"):  # a later version has no such name
        parse_record(line.replace('"v": 1', '"v": 2'))


def test_a_torn_last_line_is_skipped_and_a_bad_one_inside_is_named(tmp_path: Path) -> None:
    _, run = _session(tmp_path, [ToolCall("big", {"part": "same"}), "done"], [big])
    path = run / TRAJECTORY_FILE
    whole = path.read_text()
    path.write_text(whole + '{"kind": "tool_call", "v": 1, "st')
    assert len(read_trajectory(path)) == 5
    lines = whole.splitlines()
    lines[2] = lines[2][:40]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=rf"{path}:3: not a valid trajectory record"):
        read_trajectory(path)


def test_a_run_without_a_trajectory_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no trajectory"):
        Trajectory.load(tmp_path)


def test_the_swe_agent_form_has_each_action_its_observation_and_the_stats(tmp_path: Path) -> None:
    call = ToolCall("big", {"part": "p1"})
    script = [Reply("Reading it.", (call,), Usage()), "done"]
    _, run = _session(tmp_path, script, [big])
    traj = swe_agent_traj(Trajectory.load(run), submission="diff --git a", exit_status="PASSED")
    (step,) = traj["trajectory"]
    assert step["thought"] == "Reading it."
    assert step["action"] == 'big {"part": "p1"}'
    assert step["observation"] == f"p1\n{BIG}"  # whole, read back from the side folder
    assert traj["info"]["submission"] == "diff --git a"
    assert traj["info"]["exit_status"] == "PASSED"
    assert traj["info"]["model_stats"]["api_calls"] == 2
    assert traj["history"][-1] == {"role": "assistant", "content": "done"}
    assert [m["role"] for m in traj["history"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]


def test_a_reply_cut_at_its_token_limit_is_marked_in_the_record_and_the_view(
    tmp_path: Path,
) -> None:
    log = TrajectoryLog(tmp_path / TRAJECTORY_FILE, redactor=Redactor(env={}))
    log.emit(ROUND_1)
    message = {"role": "user", "content": "write it all"}
    for truncated in (True, False):
        call = _model_call([message])
        assert call.exchange is not None
        said = dataclasses.replace(call.exchange.reply, truncated=truncated)  # type: ignore[type-var]
        log.emit(
            call.model_copy(update={"exchange": dataclasses.replace(call.exchange, reply=said)})
        )
    lines = [json.loads(line) for line in (tmp_path / TRAJECTORY_FILE).read_text().splitlines()]
    replies = [line["reply"] for line in lines if line["kind"] == "model_call"]
    assert [reply.get("truncated") for reply in replies] == [True, None]  # written only when cut
    trajectory = Trajectory.load(tmp_path)
    assert [call.step.reply.truncated for call in trajectory.calls()] == [True, False]
    views = [entry.body for entry in entries(trajectory) if entry.title.startswith("model call")]
    assert ["(cut at its token limit)" in body for body in views] == [True, False]
