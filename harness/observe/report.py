"""Reports of a run for a person: a text summary, the HTML page, and the list of runs.

The summary itself is read by :mod:`harness.observe.run_summary`; the page is drawn by
:mod:`harness.observe.report_html`.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.core.event_schema import GateReportEvent
from harness.core.text import inert
from harness.observe.live import format_cost, format_duration, format_tokens, gate_mark
from harness.observe.run_summary import RunInfo, RunSummary, round_notes

RUNS_WIDTH = 100
"""The widest line of ``harness runs``: each column is as wide as its widest cell, and the goal
is clipped to what is left (never below :data:`GOAL_MIN` characters)."""
GOAL_MIN = 20


def render_runs(runs: list[RunInfo]) -> str:
    """``harness runs`` as a table, without a trailing newline; with a ``loop`` column when the
    runs are of more than one loop (``harness runs`` at the root of a repository of loops)."""
    if not runs:
        return "no runs yet"
    loops = len({run.loop for run in runs if run.loop}) > 1
    header = ("run", *(("loop",) if loops else ()), "started", "outcome", "rounds", "cost")
    rows = [
        (
            run.run_id,
            *((inert(run.loop, multiline=False) or "?",) if loops else ()),
            run.started.strftime("%Y-%m-%d %H:%M") if run.started else "?",
            run.outcome,
            str(run.rounds),
            format_cost(run.cost_usd),
        )
        for run in runs
    ]
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    goal_width = max(RUNS_WIDTH - sum(widths) - 2 * len(widths), GOAL_MIN)
    goals = ["goal", *(_clip(inert(run.goal, multiline=False), goal_width) for run in runs)]
    lines = []
    for row, goal in zip((header, *rows), goals, strict=True):
        cells = [cell.ljust(width) for cell, width in zip(row[:-2], widths, strict=False)]
        cells += [cell.rjust(width) for cell, width in zip(row[-2:], widths[-2:], strict=True)]
        lines.append("  ".join([*cells, goal]).rstrip())
    return "\n".join(lines)


def render_text(summary: RunSummary) -> str:
    """A plain-text report: the run's totals, a line per round, compactions and escalation;
    what the agent wrote in it is made inert (:func:`~harness.core.text.inert`)."""
    usage = summary.usage
    lines = [
        f"run {summary.run_id} · {summary.outcome} · {len(summary.rounds)}/"
        f"{summary.max_iterations} rounds · {format_duration(summary.duration)}"
        + (
            f" (of which {format_duration(summary.waited)} waiting for a person)"
            if summary.waited
            else ""
        ),
        f"goal: {summary.goal}",
        f"model: {summary.model}"
        + (f" · critic: {summary.critic_model}" if summary.critic_model else ""),
        f"usage: {usage.total_tokens:,} tokens (prompt {usage.prompt_tokens:,}, completion "
        f"{usage.completion_tokens:,}) · {format_cost(usage.cost_usd)} · {usage.calls} model calls"
        + (f" ({usage.unpriced_calls} unpriced)" if usage.unpriced_calls else ""),
        *_by_model(summary),
        *(f"note: {note}" for note in summary.notes),
        "",
        f"{'round':>5}  {'outcome':<22} {'tools':>5} {'tokens':>7} {'cost':>8}  {'critic':>6}  gates",
    ]
    for r in summary.rounds:
        critic = f"{r.verdict.score:g}" if r.verdict else "-"
        lines.append(
            f"{r.round:>5}  {r.outcome:<22} {len(r.steps):>5} {format_tokens(r.usage.total_tokens):>7} "
            f"{format_cost(r.usage.cost_usd):>8}  {critic:>6}  {_gates_text(r.gates)}"
        )
    for r in summary.rounds:
        notes = round_notes(r)
        if notes:
            lines += ["", f"round {r.round}:", *(f"  {note}" for note in notes)]
    for s in summary.switches:
        lines += ["", f"round {s.round}: {s.previous} -> {s.model}: {s.reason}"]
    if summary.escalation:
        lines += ["", f"escalation: {summary.escalation.reason}"]
        if summary.escalation.report_path:
            lines.append(f"  report: {summary.escalation.report_path}")
    if summary.stop_message:
        lines += ["", f"stop: {summary.outcome} — {summary.stop_message}"]
    for connector in summary.connectors:  # a failure changed nothing above, and is said here
        state = "" if connector.ok else "FAILED: "
        lines.append(f"connector {connector.connector}: {state}{connector.detail}")
    return inert("\n".join(lines)) + "\n"


def _by_model(summary: RunSummary) -> list[str]:
    """``cost by model: a $0.0012 (4 calls) · b $0.0300 (2 calls)`` when the author used more
    than one model (a cascade)."""
    if len(summary.by_model) < 2:
        return []
    said = (f"{name} {format_cost(u.cost_usd)} ({u.calls} calls)" for name, u in summary.by_model)
    return ["cost by model: " + " · ".join(said)]


def _gates_text(gates: Sequence[GateReportEvent]) -> str:
    return ", ".join(f"{g.name} {gate_mark(g)}" for g in gates) or "-"


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
