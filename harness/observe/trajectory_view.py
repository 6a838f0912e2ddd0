"""A trajectory for a person: step by step, as text (``harness show``) or as HTML (the report).

Both forms are drawn from the same :class:`Entry` list: a one-line title per record (a model
call, a tool call, a gate, a verdict) and the body under it (the new messages of the request,
the reply, the whole observation).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from html import escape
from typing import Any

from harness.core.text import inert
from harness.core.trajectory_schema import (
    GateStep,
    ModelStep,
    Record,
    RoundBegin,
    RoundFinish,
    RunBegin,
    SessionBegin,
    ToolStep,
    VerdictStep,
)
from harness.observe.live import format_cost, format_duration, format_tokens
from harness.observe.trajectory import Trajectory


@dataclass(frozen=True)
class Entry:
    """One record, drawn: its title line, the text under it, and how deep it sits (0 the run
    and its rounds, 1 a session, 2 a step)."""

    title: str
    body: str = ""
    depth: int = 2


def entries(trajectory: Trajectory, round: int | None = None) -> list[Entry]:
    """What to show of ``trajectory`` (of round ``round`` only, when given), in order."""
    return [
        _entry(trajectory, record)
        for record in trajectory.records
        if round is None or record.round == round or isinstance(record, RunBegin)
    ]


def render_text(trajectory: Trajectory, round: int | None = None) -> str:
    """The trajectory as plain text: titles, and each body indented under its title."""
    lines: list[str] = []
    for entry in entries(trajectory, round):
        indent = "  " * entry.depth
        if entry.depth < 2:
            lines.append("")
        lines.append(indent + entry.title)
        lines.extend(f"{indent}  │ {line}" for line in entry.body.splitlines())
    return inert("\n".join(lines).strip("\n")) + "\n"  # a recording's text is data


def render_html(trajectory: Trajectory) -> str:
    """A trajectory section for the HTML report: one collapsed block per round, each step a
    block of its own inside it."""
    parts = ["<h2>Trajectory</h2>"]
    for number in trajectory.rounds():
        steps = []
        for entry in entries(trajectory, number)[1:]:  # the run's entry heads the report already
            title = escape(entry.title)
            if entry.body:
                steps.append(
                    f"<details><summary>{title}</summary><pre>{escape(entry.body)}</pre></details>"
                )
            else:
                steps.append(f"<p><b>{title}</b></p>" if entry.depth < 2 else f"<p>{title}</p>")
        parts.append(
            f"<details><summary>round {number}: {len(steps)} records</summary>"
            + "".join(steps)
            + "</details>"
        )
    return "".join(parts)


def _entry(trajectory: Trajectory, record: Record) -> Entry:
    if isinstance(record, RunBegin):
        base = f"base {record.base[:12]}" if record.base else "no base commit"
        return Entry(f"run {record.run_id}: {record.goal}", f"{base} · {record.workspace}", 0)
    if isinstance(record, RoundBegin):
        head = f" (from {record.head[:12]})" if record.head else ""
        return Entry(f"round {record.round}{head}", depth=0)
    if isinstance(record, SessionBegin):
        return Entry(f"session {record.session}: {record.role} ({record.model})", depth=1)
    if isinstance(record, ModelStep):
        return _model_entry(trajectory, record)
    if isinstance(record, ToolStep):
        exit_code = "" if record.exit_code is None else f" · exit {record.exit_code}"
        error = " · error" if record.is_error else ""
        return Entry(
            f"tool {record.name} (step {record.step}){exit_code}{error} · {record.duration:.2f}s",
            f"arguments: {record.arguments}\n{trajectory.text(record.observation)}",
        )
    if isinstance(record, GateStep):
        verdict = "passed" if record.passed else "FAILED"
        failures = "".join(f"failed: {f}\n" for f in record.failures)
        return Entry(
            f"gate {record.name}: {verdict} ({record.summary})",
            failures + trajectory.text(record.output_tail),
        )
    if isinstance(record, VerdictStep):
        verdict = "passed" if record.passed else "FAILED"
        threshold = f", threshold {record.threshold:g}" if record.threshold is not None else ""
        body = [f"reason: {r}" for r in record.reasons] + [f"fix: {f}" for f in record.fixes]
        return Entry(f"verdict {record.score:g}/10{threshold}: {verdict}", "\n".join(body))
    assert isinstance(record, RoundFinish)
    return Entry(
        f"round {record.round} ended: {record.outcome} · "
        f"{format_tokens(record.usage.total_tokens)} tokens · {format_cost(record.usage.cost_usd)}"
        f" · {format_duration(record.duration)}",
        depth=0,
    )


def _model_entry(trajectory: Trajectory, step: ModelStep) -> Entry:
    usage = step.usage
    title = (
        f"model call ({step.role}) · {format_tokens(usage.prompt_tokens)} in, "
        f"{format_tokens(usage.completion_tokens)} out · {format_cost(usage.cost_usd)} · "
        f"{step.latency:.2f}s"
    )
    request = step.request
    lines = [f"request: {request.keep} earlier message(s), then {len(request.messages)} new:"]
    lines += [_message(trajectory, message) for message in request.messages]
    reply = step.reply
    lines.append("reply:")
    if reply.reasoning:
        lines.append(f"  (reasoning) {reply.reasoning}")
    if reply.content:
        lines.append(f"  {reply.content}")
    lines += [f"  → {call.name} {call.arguments}" for call in reply.tool_calls]
    if reply.truncated:
        lines.append("  (cut at its token limit)")
    return Entry(title, "\n".join(lines))


def _message(trajectory: Trajectory, message: dict[str, Any]) -> str:
    """One message of a request: its role, its text, and the tool calls it carries."""
    content = message.get("content")
    if isinstance(content, dict) and "blob" in content:
        content = trajectory.text(content)
    elif content is None:
        content = ""
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    calls = message.get("tool_calls") or []
    shown = [f"→ {c.get('function', {}).get('name')} {c.get('function', {}).get('arguments')}"
             for c in calls if isinstance(c, dict)]  # fmt: skip
    return "\n".join(
        [f"  [{message.get('role', '?')}] {text}".rstrip(), *(f"    {s}" for s in shown)]
    )
