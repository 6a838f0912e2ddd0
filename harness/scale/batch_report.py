"""A batch's ``summary.json`` as a text table and as one self-contained HTML page."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from urllib.parse import quote

from harness.observe.live import format_cost, format_duration, format_tokens
from harness.observe.report_html import CSS
from harness.scale.batch_summary import BatchSummary
from harness.scale.side_by_side import COLUMNS as SIDE_COLUMNS
from harness.scale.side_by_side import aligned, cells, side_by_side_table

COLUMNS = ("task", "status", "stop reason", "rounds", "score", "tokens", "cost", "time", "branch")


def _rows(summary: BatchSummary) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = [
        (
            r.name,
            r.status,
            r.stop_reason or "-",
            str(r.rounds),
            f"{r.score:g}" if r.score is not None else "-",
            format_tokens(r.tokens),
            format_cost(r.cost_usd),
            format_duration(r.seconds),
            r.branch or "-",
        )
        for r in summary.tasks
    ]
    rows += [
        (name, "not started", "-", "0", "-", "0", "-", "-", "-") for name in summary.not_started
    ]
    return rows


def _headline(summary: BatchSummary) -> str:
    total = len(summary.tasks) + len(summary.not_started)
    counts = ", ".join(f"{n} {status}" for status, n in sorted(summary.counts.items()))
    winner = f" · winner {summary.winner}" if summary.winner else ""
    return (
        f"{summary.kind} · {total} tasks · {counts}{winner} · pass rate {summary.pass_rate:.0%} · "
        f"{format_tokens(summary.totals.tokens)} tokens · {format_cost(summary.totals.cost_usd)} · "
        f"{format_duration(summary.wall_seconds)} wall on {summary.workers} {summary.backend} workers"
    )


def _notes(summary: BatchSummary) -> list[str]:
    """A line for each reason some tasks' commands ran without a sandbox."""
    return [
        f"note: {sum(r.unsandboxed == reason for r in summary.tasks)} of "
        f"{len(summary.tasks)} tasks: {reason}"
        for reason in summary.unsandboxed
    ]


def error_lines(summary: BatchSummary) -> list[str]:
    """A line for each task that ended in error, with its cause (a table says only ``error``)."""
    return [
        f"error: {r.name}: {r.message or 'no cause recorded'}"
        for r in summary.tasks
        if r.status == "error"
    ]


def render_batch_text(summary: BatchSummary) -> str:
    """The headline, then one aligned row per task, then each error's cause."""
    lines = [_headline(summary), *_notes(summary), "", aligned([COLUMNS, *_rows(summary)])]
    if errors := error_lines(summary):
        lines += ["", *errors]
    if len(summary.runners) > 1:
        lines += ["", "side by side:", side_by_side_table(summary.runners)]
    return "\n".join(lines)


def render_batch_html(summary: BatchSummary, *, links: Mapping[str, str] | None = None) -> str:
    """One page, inline CSS, no scripts or external resources; a task named in ``links`` links
    its name to its own report there (a relative address)."""
    rows = [
        [
            f'<td class="{"pass" if i == 1 and cell == "passed" else "fail" if i == 1 else ""}">'
            f"{_linked(cell, (links or {}).get(cell)) if i == 0 else escape(cell)}</td>"
            for i, cell in enumerate(row)
        ]
        for row in _rows(summary)
    ]
    side = [[f"<td>{escape(cell)}</td>" for cell in cells(row)] for row in summary.runners]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>harness {summary.kind}</title><style>{CSS}</style></head><body>"
        f"<h1>{summary.kind.capitalize()}</h1><p>{escape(_headline(summary))}</p>"
        + "".join(f"<p><b>{escape(note)}</b></p>" for note in _notes(summary))
        + _table(COLUMNS, rows)
        + "".join(f"<p>{escape(line)}</p>" for line in error_lines(summary))
        + (f"<h2>Side by side</h2>{_table(SIDE_COLUMNS, side)}" if len(side) > 1 else "")
        + "</body></html>\n"
    )


def _linked(name: str, address: str | None) -> str:
    if address is None:
        return escape(name)
    return f'<a href="{escape(quote(address))}">{escape(name)}</a>'


def _table(columns: Sequence[str], rows: list[list[str]]) -> str:
    """A table of ``columns`` whose rows' cells are HTML already (``<td>...</td>``)."""
    head = "".join(f"<th>{escape(column)}</th>" for column in columns)
    body = "".join(f"<tr>{''.join(row)}</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
