"""The schema of a run's record: one frozen pydantic model per kind of moment (documented in
docs/events.md and docs/trajectories.md).

Every event carries ``kind`` (the discriminator), ``v`` (the schema version), ``ts`` (when it
happened, ISO 8601 with a time zone) and ``run_id`` (filled in by the run's event log). A
component emits an event by building its model, so a misspelt or mistyped field fails where it
is emitted, whatever sink receives it.

Each moment is emitted once, to the run's one sink, and every file of the run is written from
that one call: the event log keeps each event's fields, the trajectory
(:class:`~harness.observe.trajectory_log.TrajectoryLog`) the kinds it records, with their whole
content. What only the trajectory keeps (the request and reply of a model call, a tool call's
observation, a gate's output) is a field marked ``exclude=True``: it is never in the event log's
line, nor in what a live display or OpenTelemetry is sent.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from harness.core.exchange import Exchange
from harness.core.usage import Usage

SCHEMA_VERSION = 1

Role = Literal["author", "critic", "summariser"]


def now_utc() -> datetime:
    """The time an event or a record is stamped with."""
    return datetime.now(UTC)


class EventBase(BaseModel):
    """Fields every event has."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str
    v: int = SCHEMA_VERSION
    ts: datetime = Field(default_factory=now_utc)
    run_id: str = ""


class RunStart(EventBase):
    kind: Literal["run_start"] = "run_start"
    goal: str
    loop_name: str | None = None
    model: str
    critic_model: str | None = None
    max_iterations: int
    budget: dict[str, float | int | None] = Field(default_factory=dict)
    workspace: str
    branch: str | None = None
    warning: str | None = None
    notes: list[str] = Field(default_factory=list)
    # What a replay needs to start again from the same place (the trajectory's alone):
    loop_file: str | None = Field(default=None, exclude=True)  # the loop.toml, when it had one
    repo_root: str | None = Field(default=None, exclude=True)  # the workspace's git repository
    folder: str = Field(default="", exclude=True)  # the workspace inside it ("" at its top)
    base: str | None = Field(default=None, exclude=True)  # the commit the run started from
    context_window: int | None = Field(default=None, exclude=True)  # the author model's


class RunEnd(EventBase):
    kind: Literal["run_end"] = "run_end"
    stop_reason: str
    passed: bool
    iterations: int
    usage: Usage = Field(default_factory=Usage)
    duration: float  # wall-clock seconds, waits for a person included
    waited: float = 0.0  # of which spent waiting for a person (not counted by budget.seconds)


class RoundStart(EventBase):
    kind: Literal["round_start"] = "round_start"
    round: int
    max_iterations: int
    task: str | None = None
    head: str | None = Field(default=None, exclude=True)  # the commit it starts from


class SessionStart(EventBase):
    """An agent session (a subagent's too) or a critic call begins: the model and tool calls
    after it belong to it, until its ``session_end``. Sessions nest."""

    kind: Literal["session_start"] = "session_start"
    role: Role
    model: str


class SessionEnd(EventBase):
    """The innermost session is over: later calls belong to the one around it (if any)."""

    kind: Literal["session_end"] = "session_end"


class RoundEnd(EventBase):
    kind: Literal["round_end"] = "round_end"
    round: int
    passed: bool
    outcome: str
    usage: Usage = Field(default_factory=Usage)
    duration: float
    cause: str = ""  # why the author's session ended early (step cap, stuck, ...); "" if it did not


class ModelCall(EventBase):
    kind: Literal["model_call"] = "model_call"
    role: Role
    model: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float = 0.0
    latency: float = 0.0
    unpriced: bool = False
    cached_tokens: int = 0
    exchange: Exchange | None = Field(default=None, exclude=True, repr=False)


class ToolStart(EventBase):
    """A tool call about to run (its ``tool_call`` event follows when it is done)."""

    kind: Literal["tool_start"] = "tool_start"
    name: str
    arguments_preview: str = ""
    step: int | None = None


class ToolCallEvent(EventBase):
    kind: Literal["tool_call"] = "tool_call"
    name: str
    arguments_preview: str = ""
    exit_code: int | None = None
    is_error: bool = False
    duration: float = 0.0
    output_chars: int = 0
    step: int | None = None
    call_id: str = Field(default="", exclude=True)
    observation: str | None = Field(default=None, exclude=True, repr=False)  # as the model got it


class GateReportEvent(EventBase):
    kind: Literal["gate_report"] = "gate_report"
    round: int | None = None
    name: str
    passed: bool
    summary: str = ""
    failures: list[str] = Field(default_factory=list)
    duration: float = 0.0
    output_tail: str = Field(default="", exclude=True, repr=False)


class ChecksStart(EventBase):
    """The author's session is over; the round's gates (then the critic) judge it now."""

    kind: Literal["checks_start"] = "checks_start"
    round: int
    gates: list[str] = Field(default_factory=list)
    critic: bool = False


class PanelMember(BaseModel):
    """One critic's verdict inside a panel's ``critic_verdict``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    critic: str  # its role, else its model
    score: float
    passed: bool


class CriticVerdict(EventBase):
    kind: Literal["critic_verdict"] = "critic_verdict"
    round: int | None = None
    score: float
    passed: bool
    reasons: list[str] = Field(default_factory=list)
    fixes: list[str] = Field(default_factory=list)
    threshold: float | None = None
    messages: list[dict[str, Any]] = Field(default_factory=list)  # the request, redacted in the log
    # A panel's verdict only: each critic's, how they were combined, and whether they split.
    members: list[PanelMember] = Field(default_factory=list)
    aggregate: str | None = None
    spread: float | None = None
    split: bool = False


class Compaction(EventBase):
    kind: Literal["compaction"] = "compaction"
    strategy: str
    tokens_before: int
    tokens_after: int
    duration: float = 0.0
    dropped: list[str] = Field(default_factory=list)
    trigger: Literal["hard", "soft"] = "hard"
    attempts: int = 1
    model_tokens: int = 0


class BudgetCheck(EventBase):
    """A model call the budget refused; the run stops after it."""

    kind: Literal["budget_check"] = "budget_check"
    role: Role
    estimated_tokens: int
    estimated_cost: float | None = None
    reason: str


class Stop(EventBase):
    kind: Literal["stop"] = "stop"
    reason: str
    message: str = ""


class Escalation(EventBase):
    kind: Literal["escalation"] = "escalation"
    reason: str
    report_path: str | None = None


class ApprovalEvent(EventBase):
    kind: Literal["approval"] = "approval"
    round: int
    outcome: Literal["approved", "rejected", "timed_out"]
    note: str = ""
    waited: float = 0.0


class ModelSwitch(EventBase):
    """A model cascade moves the author on to the next model, from ``round`` on."""

    kind: Literal["model_switch"] = "model_switch"
    round: int
    previous: str
    model: str
    reason: str
    spent_usd: float = 0.0  # what the author's calls on ``previous`` cost


class NoteEvent(EventBase):
    kind: Literal["note"] = "note"
    round: int
    text: str


class HookFailed(EventBase):
    kind: Literal["hook_failed"] = "hook_failed"
    hook: str
    round: int | None = None
    error: str


class PermissionEvent(EventBase):
    """What the permission rules said of a tool call, and a person's answer when asked."""

    kind: Literal["permission"] = "permission"
    tool: str
    subject: str  # the command, path or tool name judged
    verdict: Literal["allow", "ask", "deny"]  # what the rules said
    decision: Literal["allowed", "denied"]  # what happened to the call
    rule: str | None = None
    source: Literal["rule", "default", "unreadable"] = "rule"
    answer: Literal["approved", "rejected", "timed_out", "unattended"] | None = None
    reason: str = ""
    step: int | None = None


class ActionHookEvent(EventBase):
    """An action hook ran before or after a tool call (or was kept from running)."""

    kind: Literal["action_hook"] = "action_hook"
    hook: str
    when: Literal["before", "after"]
    tool: str
    outcome: Literal["passed", "blocked", "observed", "failed", "guarded"]
    detail: str = ""
    step: int | None = None


class SubagentEvent(EventBase):
    """A child session the agent started with the subagent tool ended."""

    kind: Literal["subagent"] = "subagent"
    profile: str | None = None
    depth: int
    model: str
    stop_reason: str
    steps: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    files: list[str] = []


class ConnectorEvent(EventBase):
    """A connector ran at the end of a run (or for a round's CI): what it did, or why it failed.
    A failure never changes the run's verdict."""

    kind: Literal["connector"] = "connector"
    connector: str  # its type: push, pull_request, issue_comment, webhook, artifact
    occasion: str  # pass, escalate, or round
    ok: bool
    detail: str = ""  # what it did (a URL, a commit) or why it failed


class TriggerEvent(EventBase):
    """``harness watch``: a trigger fired; the loop started, or not (it was still running)."""

    kind: Literal["trigger"] = "trigger"
    trigger: str  # schedule, issues, webhook
    loop_name: str
    started: bool
    reason: str = ""  # why not, when not started
    issue: int | None = None
    branch: str | None = None  # the pushed branch it came from
    commit: str | None = None  # that branch's head as pushed
    started_run: str | None = None  # the run id it started
    pull: int | None = None  # the pull request a review was of
    author: str | None = None  # the review's author (a login)


Event = Annotated[
    RunStart
    | RunEnd
    | RoundStart
    | RoundEnd
    | SessionStart
    | SessionEnd
    | ModelCall
    | ToolStart
    | ToolCallEvent
    | ChecksStart
    | GateReportEvent
    | CriticVerdict
    | Compaction
    | BudgetCheck
    | Stop
    | Escalation
    | ApprovalEvent
    | ModelSwitch
    | NoteEvent
    | HookFailed
    | PermissionEvent
    | ActionHookEvent
    | SubagentEvent
    | ConnectorEvent
    | TriggerEvent,
    Field(discriminator="kind"),
]

EVENT_MODELS: dict[str, type[EventBase]] = {
    model.model_fields["kind"].default: model for model in get_args(get_args(Event)[0])
}
"""Each event kind and its model."""

_EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)


def parse_event(line: str | bytes) -> Event:
    """One event from one JSON line (as the event log stores it)."""
    return _EVENT_ADAPTER.validate_json(line)
