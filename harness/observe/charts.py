"""Small inline SVG charts for self-contained HTML pages: no scripts, no external resources."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from typing import Literal

CHART_WIDTH = 456
CHART_HEIGHT = 200
TIMELINE_WIDTH = 920
PLOT_LEFT = 56
PLOT_RIGHT = 16
PLOT_TOP = 28
FONT = 'font-family="system-ui, sans-serif" font-size="11"'


@dataclass(frozen=True)
class Series:
    """One stacked layer of a bar chart."""

    name: str
    values: Sequence[float]
    color: str


@dataclass(frozen=True)
class Mark:
    """Something that happened at ``at`` seconds into the run, drawn on a timeline row."""

    at: float
    kind: Literal["step", "error", "compaction"]
    title: str


@dataclass(frozen=True)
class TimelineRow:
    """One round on the timeline: its span in seconds from the run's start, and its marks."""

    label: str
    start: float
    end: float
    passed: bool | None
    marks: Sequence[Mark]


MARK_COLORS = {"step": "#4e79a7", "error": "#c62828", "compaction": "#8e44ad"}
ROW_COLORS = {True: "#d8efd9", False: "#f8d9d9", None: "#e6e6e6"}


def _svg(width: int, height: int, title: str, body: list[str]) -> str:
    return (
        f'<svg viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{escape(title)}" {FONT}>'
        f'<text x="{PLOT_LEFT}" y="16" font-size="13" font-weight="600">{escape(title)}</text>'
        + "".join(body)
        + "</svg>"
    )


def _num(value: float) -> str:
    """A coordinate: a whole number as it is, any other to a tenth."""
    return str(value) if isinstance(value, int) else f"{value:.1f}"


def _text(x: float, y: float, text: str, anchor: str = "middle", more: str = "") -> str:
    """A label at ``x``, ``y``; ``more`` is further attributes."""
    return f'<text x="{_num(x)}" y="{_num(y)}" text-anchor="{anchor}"{more}>{escape(text)}</text>'


def _across(y: float, width: int, stroke: str, more: str = "") -> str:
    """A line across the plot at height ``y``."""
    y_at = _num(y)
    return (
        f'<line x1="{PLOT_LEFT}" y1="{y_at}" x2="{width - PLOT_RIGHT}" y2="{y_at}" '
        f'stroke="{stroke}"{more}/>'
    )


def _legend(items: Sequence[tuple[str, str]], y: int) -> list[str]:
    parts, x = [], PLOT_LEFT
    for name, color in items:
        parts.append(f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{color}"/>')
        parts.append(f'<text x="{x + 14}" y="{y}">{escape(name)}</text>')
        x += 24 + 7 * len(name)
    return parts


def bar_chart(
    labels: Sequence[str],
    series: Sequence[Series],
    *,
    title: str,
    fmt: Callable[[float], str],
) -> str:
    """Stacked bars, one per label; each bar's total is written above it."""
    width, height = CHART_WIDTH, CHART_HEIGHT
    bottom = height - 40
    totals = [sum(s.values[i] for s in series) for i in range(len(labels))]
    top = max(totals, default=0)
    plot_w = width - PLOT_LEFT - PLOT_RIGHT
    slot = plot_w / max(len(labels), 1)
    bar_w = min(slot * 0.6, 48)
    scale = (bottom - PLOT_TOP - 12) / (top or 1.0)
    body = [_across(bottom, width, "#888"), _text(PLOT_LEFT - 6, bottom, "0", "end")]
    if top:
        body.append(_text(PLOT_LEFT - 6, bottom - top * scale + 4, fmt(top), "end"))
    else:
        middle = (PLOT_TOP + bottom) / 2
        body.append(_text(PLOT_LEFT + plot_w / 2, middle, "all zero", more=' fill="#777"'))
    for i, label in enumerate(labels):
        x = PLOT_LEFT + slot * i + (slot - bar_w) / 2
        y = float(bottom)
        for s in series:
            h = s.values[i] * scale
            y -= h
            body.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar_w:.1f}" height="{h:.1f}" fill="{s.color}">'
                f"<title>{escape(f'{label}: {s.name} {fmt(s.values[i])}')}</title></rect>"
            )
        cx = x + bar_w / 2
        body += [_text(cx, y - 4, fmt(totals[i])), _text(cx, bottom + 14, label)]
    body += _legend([(s.name, s.color) for s in series], height - 6)
    return _svg(width, height, title, body)


def line_chart(
    labels: Sequence[str],
    values: Sequence[float | None],
    *,
    title: str,
    y_max: float,
    color: str,
    empty: str = "no values",
    threshold: float | None = None,
) -> str:
    """A line through the values on a 0..``y_max`` scale; ``None`` leaves a gap, and a chart
    with no value at all says ``empty`` across it. A ``threshold`` is a dashed line across the
    plot at that value, labelled."""
    width, height = CHART_WIDTH, CHART_HEIGHT
    bottom = height - 28
    plot_w = width - PLOT_LEFT - PLOT_RIGHT
    slot = plot_w / max(len(labels), 1)
    scale = (bottom - PLOT_TOP) / y_max

    def y_of(value: float) -> float:
        return bottom - value * scale

    body = [_across(bottom, width, "#888")]
    for tick in (0, y_max / 2, y_max):
        body += [
            _text(PLOT_LEFT - 6, y_of(tick) + 4, f"{tick:g}", "end"),
            _across(y_of(tick), width, "#eee"),
        ]
    if threshold is not None:
        at = y_of(threshold)
        body += [
            _across(at, width, "#555", ' stroke-dasharray="4 3" class="threshold"'),
            _text(width - PLOT_RIGHT, at - 4, f"threshold {threshold:g}", "end", ' fill="#555"'),
        ]
    points: list[str] = []
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        cx = PLOT_LEFT + slot * i + slot / 2
        body.append(_text(cx, bottom + 14, label))
        if value is None:
            if len(points) > 1:
                body.append(_polyline(points, color))
            points = []
            continue
        points.append(f"{cx:.1f},{y_of(value):.1f}")
        body.append(
            f'<circle cx="{cx:.1f}" cy="{y_of(value):.1f}" r="4" fill="{color}">'
            f"<title>{escape(f'{label}: {value:g}')}</title></circle>"
        )
        body.append(_text(cx, y_of(value) - 8, f"{value:g}"))
    if len(points) > 1:
        body.append(_polyline(points, color))
    if all(value is None for value in values):
        middle = (PLOT_TOP + bottom) / 2
        body.append(_text(PLOT_LEFT + plot_w / 2, middle, empty, more=' class="empty"'))
    return _svg(width, height, title, body)


def _polyline(points: list[str], color: str) -> str:
    return f'<polyline points="{" ".join(points)}" fill="none" stroke="{color}" stroke-width="2"/>'


def timeline(
    rows: Sequence[TimelineRow],
    *,
    title: str,
    total: float,
    fmt_time: Callable[[float], str],
) -> str:
    """One band per round over the run's duration, with a tick per step and compactions marked."""
    width = TIMELINE_WIDTH
    row_h = 26
    height = PLOT_TOP + row_h * len(rows) + 44
    plot_w = width - PLOT_LEFT - PLOT_RIGHT
    scale = plot_w / (total or 1.0)
    axis_y = PLOT_TOP + row_h * len(rows) + 4
    body = [_across(axis_y, width, "#888")]
    for frac in (0, 0.25, 0.5, 0.75, 1):
        x = float(PLOT_LEFT + plot_w * frac)
        anchor = "start" if frac == 0 else "end" if frac == 1 else "middle"
        body.append(_text(x, axis_y + 14, fmt_time(total * frac), anchor))
    for index, row in enumerate(rows):
        top = PLOT_TOP + row_h * index
        x0, x1 = PLOT_LEFT + row.start * scale, PLOT_LEFT + row.end * scale
        body.append(_text(PLOT_LEFT - 6, top + 16, row.label, "end"))
        body.append(
            f'<rect x="{x0:.1f}" y="{top + 3}" width="{max(x1 - x0, 2):.1f}" height="{row_h - 6}" '
            f'rx="3" fill="{ROW_COLORS[row.passed]}"/>'
        )
        # Each band says how long it took, so a short round beside a long one stays legible.
        inside = x1 > width - PLOT_RIGHT - 60
        took = _seconds(row.end - row.start, fmt_time)
        x = x1 - 4 if inside else x1 + 4
        body.append(_text(x, top + 16, took, "end" if inside else "start", ' class="duration"'))
        for mark in row.marks:
            body.append(_mark(PLOT_LEFT + mark.at * scale, top, row_h, mark))
    body += _legend(
        [
            ("step", MARK_COLORS["step"]),
            ("failed step", MARK_COLORS["error"]),
            ("compaction", MARK_COLORS["compaction"]),
        ],  # fmt: skip
        height - 8,
    )
    return _svg(width, height, title, body)


def _seconds(duration: float, fmt_time: Callable[[float], str]) -> str:
    """``0.03 s``, ``3.7 s``, or the clock format from a minute on."""
    if duration < 1:
        return f"{duration:.2f} s"
    return f"{duration:.1f} s" if duration < 60 else fmt_time(duration)


def _mark(x: float, top: int, row_h: int, mark: Mark) -> str:
    color = MARK_COLORS[mark.kind]
    tip = f"<title>{escape(mark.title)}</title>"
    if mark.kind == "compaction":
        mid = top + row_h / 2
        return (
            f'<polygon points="{x:.1f},{mid - 8:.1f} {x + 6:.1f},{mid:.1f} {x:.1f},{mid + 8:.1f} '
            f'{x - 6:.1f},{mid:.1f}" fill="{color}">{tip}</polygon>'
        )
    return f'<rect x="{x - 1.5:.1f}" y="{top + 5}" width="3" height="{row_h - 10}" fill="{color}">{tip}</rect>'
