"""A run's report as one self-contained HTML page.

Inline CSS and inline SVG charts (:mod:`harness.observe.charts`): no scripts and no external
resources, so the page opens anywhere without a network.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from html import escape

from harness.core.event_schema import SCHEMA_VERSION, GateReportEvent
from harness.core.text import inert
from harness.observe.charts import Mark, Series, TimelineRow, bar_chart, line_chart, timeline
from harness.observe.live import format_cost, format_duration, format_tokens, gate_mark
from harness.observe.run_summary import RoundSummary, RunSummary, round_failures, round_notes
from harness.observe.trajectory import Trajectory
from harness.observe.trajectory_view import render_html as trajectory_html

CSS = """
body { font: 14px/1.45 system-ui, sans-serif; color: #222; margin: 24px auto; max-width: 960px;
       padding: 0 16px; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 28px 0 8px; }
.badge { display: inline-block; padding: 2px 8px; border-radius: 10px; color: #fff;
         font-size: 12px; vertical-align: middle; }
.ok { background: #2e7d32; } .bad { background: #c62828; } .unknown { background: #777; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 12px 0; }
.card { border: 1px solid #ddd; border-radius: 6px; padding: 8px 12px; min-width: 110px; }
.card b { display: block; font-size: 18px; }
.charts { display: flex; flex-wrap: wrap; gap: 8px; }
svg { max-width: 100%; height: auto; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f4f4f4; } td.pass { color: #2e7d32; } td.fail { color: #c62828; }
.escalation { border: 2px solid #c62828; border-radius: 6px; padding: 8px 16px; background: #fff5f5; }
.muted { color: #777; } code { font-size: 12px; }
pre { white-space: pre-wrap; background: #f8f8f8; padding: 6px; font-size: 12px; }
"""


def render_html(
    summary: RunSummary, trajectory: Trajectory | None = None, *, work: str | None = None
) -> str:
    """One self-contained HTML page: totals, charts, timeline, gates, rounds, escalation, the
    run branch's diff against its base (``work``, when given), and the trajectory of each round
    when the run recorded one."""
    sections = [
        _header_html(summary),
        _charts_html(summary),
        _timeline_html(summary),
        _gates_html(summary),
        _rounds_html(summary),
        _escalation_html(summary),
        _work_html(summary, work),
        trajectory_html(trajectory) if trajectory is not None else "",
    ]
    return inert(  # the run's texts are data: no control character reaches the page
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>harness run {escape(summary.run_id)}</title><style>{CSS}</style></head><body>"
        + "".join(sections)
        + f'<p class="muted">harness event schema v{SCHEMA_VERSION} · {escape(str(summary.path))}</p>'
        + "</body></html>\n"
    )


def _header_html(summary: RunSummary) -> str:
    css = "ok" if summary.passed else "unknown" if summary.stop_reason is None else "bad"
    usage = summary.usage
    cards = [
        ("rounds", f"{len(summary.rounds)} / {summary.max_iterations}"),
        ("tokens", format_tokens(usage.total_tokens)),
        ("cost", format_cost(usage.cost_usd)),
        ("model calls", str(usage.calls)),
        ("duration", format_duration(summary.duration)),
        *([("waiting for a person", format_duration(summary.waited))] if summary.waited else []),
        ("compactions", str(len(summary.compactions))),
    ]
    critic = (
        f" · critic <code>{escape(summary.critic_model)}</code>" if summary.critic_model else ""
    )
    branch = f"<br>branch <code>{escape(summary.branch)}</code>" if summary.branch else ""
    return (
        f'<h1>Run {escape(summary.run_id)} <span class="badge {css}">{escape(summary.outcome)}</span></h1>'
        f"<p><b>Goal:</b> {escape(summary.goal)}<br>model <code>{escape(summary.model)}</code>{critic}"
        + branch
        + (f"<br>{escape(summary.stop_message)}" if summary.stop_message else "")
        + "".join(f"<br><b>Note:</b> {escape(note)}" for note in summary.notes)
        + '</p><div class="cards">'
        + "".join(f'<div class="card">{name}<b>{escape(value)}</b></div>' for name, value in cards)
        + "</div>"
    )


def _charts_html(summary: RunSummary) -> str:
    if not summary.rounds:
        return "<h2>Rounds</h2><p>No round started.</p>"
    labels = [f"round {r.round}" for r in summary.rounds]
    tokens = bar_chart(
        labels,
        [
            Series("prompt tokens", [r.usage.prompt_tokens for r in summary.rounds], "#4e79a7"),
            Series(
                "completion tokens", [r.usage.completion_tokens for r in summary.rounds], "#f28e2b"
            ),
        ],
        title="Tokens per round",
        fmt=lambda v: format_tokens(int(v)),
    )
    costs = [r.usage.cost_usd for r in summary.rounds]
    cost = (  # no chart of nothing: a scripted or unpriced model's rounds cost $0
        bar_chart(
            labels,
            [Series("cost (USD)", costs, "#59a14f")],
            title="Cost per round",
            fmt=format_cost,
        )
        if any(costs)
        else ""
    )
    verdicts = [r.verdict for r in summary.rounds]
    thresholds = [v.threshold for v in verdicts if v is not None and v.threshold is not None]
    scores = line_chart(
        labels,
        [v.score if v else None for v in verdicts],
        title="Critic score per round",
        y_max=10,
        color="#e15759",
        empty="no critic verdict: the critic is off, or no round got as far as the review",
        threshold=thresholds[-1] if thresholds else None,
    )
    return f'<h2>Usage and scores</h2><div class="charts">{tokens}{cost}{scores}</div>'


def _timeline_html(summary: RunSummary) -> str:
    if not summary.rounds or summary.started is None:
        return ""
    origin = summary.started

    def at(ts: datetime) -> float:
        return (ts - origin).total_seconds()

    rows = []
    for r in summary.rounds:
        marks = [
            Mark(at(s.ts), "error" if s.is_error or s.exit_code not in (0, None) else "step",
                 f"step {s.step}: {s.name} (exit {s.exit_code}, {s.duration:.1f}s)")
            for s in r.steps
        ] + [
            Mark(at(c.ts), "compaction",
                 f"compaction ({c.strategy}): {c.tokens_before} → {c.tokens_after} tokens")
            for c in r.compactions
        ]  # fmt: skip
        end = r.ended or (r.started + timedelta(seconds=r.duration))
        rows.append(TimelineRow(f"round {r.round}", at(r.started), at(end), r.passed, marks))
    total = max(summary.duration, max(row.end for row in rows))
    chart = timeline(
        rows, title="Rounds and steps over time", total=total, fmt_time=_clock_format(total)
    )
    return f"<h2>Timeline</h2>{chart}"


def _gates_html(summary: RunSummary) -> str:
    names = list(dict.fromkeys(g.name for r in summary.rounds for g in r.gates))
    if not names:
        return ""
    head = "".join(f"<th>round {r.round}</th>" for r in summary.rounds)
    rows = []
    for name in names:
        cells = []
        for r in summary.rounds:
            gate = next((g for g in reversed(r.gates) if g.name == name), None)
            cells.append(_gate_cell(gate))
        rows.append(f"<tr><th>{escape(name)}</th>{''.join(cells)}</tr>")
    return f"<h2>Gate outcomes</h2><table><tr><th>gate</th>{head}</tr>{''.join(rows)}</table>"


def _gate_cell(gate: GateReportEvent | None) -> str:
    if gate is None:
        return '<td class="muted">–</td>'
    css = "pass" if gate.passed else "fail"
    tip = escape("; ".join([gate.summary, *gate.failures]))
    return f'<td class="{css}" title="{tip}">{gate_mark(gate)}</td>'


def _rounds_html(summary: RunSummary) -> str:
    if not summary.rounds:
        return ""
    head = "<tr><th>round</th><th>outcome</th><th>tool calls</th><th>tokens</th><th>cost</th><th>critic</th><th>notes</th></tr>"
    rows = [_round_row(r) for r in summary.rounds]
    return f"<h2>Rounds</h2><table>{head}{''.join(rows)}</table>"


def _round_row(r: RoundSummary) -> str:
    verdict = r.verdict
    passed = (
        [f"critic {verdict.score:g}: {reason}" for reason in verdict.reasons]
        if (verdict is not None and verdict.passed)
        else []
    )  # why the critic passed it (a failing verdict's reasons are among the notes)
    notes = [escape(note) for note in [*passed, *round_notes(r)]]
    steps = "".join(
        f"<li><code>{escape(s.name)}</code> {escape(s.arguments_preview)} → exit {s.exit_code}, "
        f"{s.output_chars} chars, {s.duration:.1f}s</li>"
        for s in r.steps
    )
    if steps:
        notes.append(
            f"<details><summary>{len(r.steps)} tool calls</summary><ol>{steps}</ol></details>"
        )
    css = "pass" if r.passed else "fail"
    critic = f"{r.verdict.score:g}" if r.verdict else "–"
    return (
        f'<tr><td>{r.round}</td><td class="{css}">{escape(r.outcome)}</td><td>{len(r.steps)}</td>'
        f"<td>{format_tokens(r.usage.total_tokens)}</td><td>{format_cost(r.usage.cost_usd)}</td>"
        f"<td>{critic}</td><td>{'<br>'.join(notes)}</td></tr>"
    )


def _escalation_html(summary: RunSummary) -> str:
    esc = summary.escalation
    if esc is None:
        return ""
    report = (
        f"<p>Report for a person: <code>{escape(esc.report_path)}</code></p>"
        if esc.report_path
        else ""
    )
    failures = round_failures(summary.rounds[-1]) if summary.rounds else []
    items = "".join(f"<li>{escape(f)}</li>" for f in failures)
    return (
        f'<h2>Escalation</h2><div class="escalation"><p><b>{escape(esc.reason)}</b> — '
        f"{escape(summary.stop_message)}</p>{report}"
        + (f"<p>Last round's failures:</p><ul>{items}</ul>" if items else "")
        + "</div>"
    )


def _work_html(summary: RunSummary, work: str | None) -> str:
    if work is None:
        return ""
    shown = f"<pre>{escape(work)}</pre>" if work else "<p>No change.</p>"
    return (
        f"<h2>The work</h2><p>Branch <code>{escape(summary.branch or '')}</code> against the "
        f"commit its run started from:</p>{shown}"
    )


def _clock_format(total: float) -> Callable[[float], str]:
    """Axis labels for a timeline ``total`` seconds long: tenths of seconds for short runs."""
    return format_duration if total >= 60 else lambda seconds: f"{seconds:.1f}s"
