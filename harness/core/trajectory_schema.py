"""The trajectory's schema: one frozen pydantic model per record kind (documented in
docs/trajectories.md).

A trajectory is what a run said to its models and what it got back, step by step: every request
as it was sent, every reply, every tool call with its observation, each round's gate reports and
verdict. Every record carries ``kind`` (the discriminator), ``v`` (:data:`TRAJECTORY_VERSION`),
``ts``, and the ``round`` and ``session`` it belongs to (stamped by the writer). Nothing builds
these records but the trajectory's writer, :class:`~harness.observe.trajectory_log.TrajectoryLog`:
it makes each of the moment emitted to the run's sink (an event of
:mod:`harness.core.event_schema`), under the event's own kind name.

Version 2 writes each record under its event's kind; version 1 wrote five of them under names of
their own (:data:`VERSION_1_KINDS`), and is read as well, into the same models, each record under
its kind's name today.

Two forms keep the file small. A request holds only what changed since the previous request of
the same session and role (``keep`` messages are taken from it, ``messages`` follow), and its
tool schemas by hash. A text longer than the writer's limit (an observation, a message's content,
a gate's output) is a :class:`Blob`: its SHA-256, stored once in the side folder.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from harness.core.event_schema import (
    CriticVerdict,
    EventBase,
    GateReportEvent,
    Role,
    RoundEnd,
    RoundStart,
    RunStart,
    SessionStart,
    now_utc,
)
from harness.core.usage import Usage

TRAJECTORY_VERSION = 2

BLOB_NAME = r"^[0-9a-f]{64}$"
"""The shape of a blob's name, a SHA-256 in hex: a recording's names are checked against it
before a file is opened, so none leads out of the side folder (``..``, an absolute path)."""


class Blob(BaseModel):
    """A text stored once in the trajectory's side folder, by the SHA-256 of its UTF-8 bytes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    blob: str = Field(pattern=BLOB_NAME)
    chars: int


Text = str | Blob
"""A text kept in the line, or a reference to it in the side folder."""


class RecordBase(BaseModel):
    """Fields every record has."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str
    v: int = TRAJECTORY_VERSION
    ts: datetime = Field(default_factory=now_utc)
    round: int | None = None
    session: int | None = None


class RunBegin(RecordBase):
    """The run: what a replay needs to start again from the same place."""

    kind: Literal["run_start"] = "run_start"
    run_id: str
    goal: str
    loop_file: str | None = None  # the loop.toml the run was built from, when it had one
    repo_root: str | None = None  # the git repository the workspace is in
    workspace: str  # the folder the agent worked in (a worktree of its own, or the user's)
    folder: str = ""  # the workspace's folder inside the repository ("" at its top)
    base: str | None = Field(None, pattern=r"^[0-9a-f]{7,64}$")  # the commit the run started from
    context_window: int | None = None  # the author model's, which decides when to compact


class RoundBegin(RecordBase):
    kind: Literal["round_start"] = "round_start"
    round: int
    head: str | None = None  # the commit the round starts from


class SessionBegin(RecordBase):
    """An agent session or a critic call: the steps after it belong to it."""

    kind: Literal["session_start"] = "session_start"
    role: Role
    model: str


class Request(BaseModel):
    """A request as sent, relative to the previous one of its session and role."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    keep: int = 0  # messages taken, in order, from the start of the previous request
    messages: list[dict[str, Any]]  # the ones after them; a long ``content`` is a Blob's fields
    # the blob of the tool schemas' JSON; None: no tools were offered
    tools: str | None = Field(None, pattern=BLOB_NAME)
    max_tokens: int | None = None
    wire: dict[str, Any] | None = None
    """The rest of the body as it went on the wire (model, limits, a provider's system field),
    in its order there, with ``messages`` and ``tools`` null where they stood; where the model
    reported it, ``messages`` and ``tools`` are the wire's too."""


class RecordedCall(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    name: str
    arguments: str  # as the model sent it (may be malformed JSON)


class RecordedReply(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    content: str | None = None
    tool_calls: list[RecordedCall] = Field(default_factory=list)
    reasoning: str | None = None  # where the provider returns it
    truncated: bool = Field(False, exclude_if=lambda cut: not cut)  # cut at its token limit


class ModelStep(RecordBase):
    """One model call: the request as sent (after compaction and redaction) and the reply."""

    kind: Literal["model_call"] = "model_call"
    role: Role
    model: str
    request: Request
    reply: RecordedReply
    usage: Usage = Field(default_factory=Usage)
    latency: float = 0.0


class ToolStep(RecordBase):
    """One tool call and its full observation (what the model is sent back)."""

    kind: Literal["tool_call"] = "tool_call"
    step: int
    call_id: str
    name: str
    arguments: str
    observation: Text
    exit_code: int | None = None
    is_error: bool = False
    duration: float = 0.0


class GateStep(RecordBase):
    kind: Literal["gate_report"] = "gate_report"
    name: str
    passed: bool
    summary: str = ""
    failures: list[str] = Field(default_factory=list)
    output_tail: Text = ""


class VerdictStep(RecordBase):
    kind: Literal["critic_verdict"] = "critic_verdict"
    score: float
    passed: bool
    reasons: list[str] = Field(default_factory=list)
    fixes: list[str] = Field(default_factory=list)
    threshold: float | None = None


class RoundFinish(RecordBase):
    kind: Literal["round_end"] = "round_end"
    passed: bool
    outcome: str
    usage: Usage = Field(default_factory=Usage)
    duration: float = 0.0


Record = Annotated[
    RunBegin
    | RoundBegin
    | SessionBegin
    | ModelStep
    | ToolStep
    | GateStep
    | VerdictStep
    | RoundFinish,
    Field(discriminator="kind"),
]

_ADAPTER: TypeAdapter[Record] = TypeAdapter(Record)


VERSION_1_KINDS = {
    "run": "run_start",
    "round": "round_start",
    "session": "session_start",
    "gate": "gate_report",
    "verdict": "critic_verdict",
}
"""The kinds version 1 wrote under names of their own, and their names since (their events')."""


def parse_record(line: str | bytes) -> Record:
    """One record from one JSON line (as the trajectory stores it); a record of version 1 under
    a name of its own (:data:`VERSION_1_KINDS`) reads as its kind is named today."""
    try:
        return _ADAPTER.validate_json(line)
    except ValidationError:
        data = json.loads(line)
        if (
            not isinstance(data, dict)
            or data.get("v") != 1
            or data.get("kind") not in VERSION_1_KINDS
        ):
            raise
        return _ADAPTER.validate_python({**data, "kind": VERSION_1_KINDS[data["kind"]]})


RECORDS: dict[type[EventBase], type[RecordBase]] = {
    RunStart: RunBegin,
    RoundStart: RoundBegin,
    SessionStart: SessionBegin,
    GateReportEvent: GateStep,
    CriticVerdict: VerdictStep,
    RoundEnd: RoundFinish,
}
"""The kinds of event recorded as a record of their own, and its model: the record's fields are
the event's of the same names (a model call's and a tool call's lines are built by the writer,
from what the event carries)."""

_FIELDS = {
    event: tuple(name for name in record.model_fields
                 if name not in ("kind", "v") and name in event.model_fields)
    for event, record in RECORDS.items()
}  # fmt: skip
"""The fields each recorded kind of event gives its record."""


def record_of(event: EventBase) -> RecordBase | None:
    """The trajectory's record of ``event`` (:data:`RECORDS`), with the event's kind and time;
    None for a moment that is not recorded as a record of its own."""
    record = RECORDS.get(type(event))
    if record is None:
        return None
    return record(**{name: getattr(event, name) for name in _FIELDS[type(event)]})
