"""Agents side by side: the figures each runner earned on the same tasks under the same gates.

``harness run --attempts --runner a,b``, ``harness batch --runner a,b`` and ``harness bench
swebench --runner a,b`` give each attempt or task a runner; :func:`compare` groups the attempts
that ended by runner: how many passed (resolved), what they cost, how long they took, and the
cost and time per passing attempt (every attempt's cost or time over the ones that passed).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from pydantic import BaseModel, ConfigDict


class Outcome(Protocol):
    """One ended attempt as the comparison reads it (a batch record, a benchmark result)."""

    @property
    def runner(self) -> str | None: ...
    @property
    def resolved(self) -> bool: ...
    @property
    def cost_usd(self) -> float: ...
    @property
    def seconds(self) -> float: ...
    @property
    def tokens(self) -> int: ...
    @property
    def rounds(self) -> int: ...


class RunnerFigures(BaseModel):
    """What one runner's attempts came to."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    runner: str
    attempts: int
    """Its attempts that ended."""
    resolved: int
    """Of those, the ones that passed every gate (a benchmark: every held-out test)."""
    tokens: int
    cost_usd: float
    seconds: float
    """Its attempts' own times added up."""
    cost_per_resolved: float | None
    """``cost_usd`` over ``resolved``; None when none passed."""
    seconds_per_resolved: float | None
    """``seconds`` over ``resolved``; None when none passed."""
    mean_rounds: float = 0.0
    """Rounds per attempt."""


UNNAMED = "harness"
"""The runner of an attempt recorded without one (before runners were recorded), and of a
benchmark run without ``--runner`` (its generated loop.toml names none): the harness's agent."""


def compare(outcomes: Iterable[Outcome], order: Sequence[str] = ()) -> list[RunnerFigures]:
    """Each runner's figures: the runners of ``order`` first, in that order (also those with no
    attempt ended), then any other in the order first seen."""
    grouped: dict[str, list[Outcome]] = {name: [] for name in order}
    for outcome in outcomes:
        grouped.setdefault(outcome.runner or UNNAMED, []).append(outcome)
    return [figures(name, group) for name, group in grouped.items()]


def figures(runner: str, outcomes: Sequence[Outcome]) -> RunnerFigures:
    resolved = sum(o.resolved for o in outcomes)
    cost = round(sum(o.cost_usd for o in outcomes), 6)
    seconds = round(sum(o.seconds for o in outcomes), 3)
    return RunnerFigures(
        runner=runner,
        attempts=len(outcomes),
        resolved=resolved,
        tokens=sum(o.tokens for o in outcomes),
        cost_usd=cost,
        seconds=seconds,
        cost_per_resolved=round(cost / resolved, 6) if resolved else None,
        seconds_per_resolved=round(seconds / resolved, 3) if resolved else None,
        mean_rounds=round(sum(o.rounds for o in outcomes) / len(outcomes), 2) if outcomes else 0.0,
    )


COLUMNS = (
    "runner", "resolved", "tokens", "cost", "time", "cost/resolved", "time/resolved", "rounds",
)  # fmt: skip


def cells(row: RunnerFigures, *, out_of: int | None = None) -> tuple[str, ...]:
    """A row's cells; ``out_of``: the attempts each runner was given (default: those ended)."""
    per_cost = "-" if row.cost_per_resolved is None else f"${row.cost_per_resolved:.4f}"
    per_time = "-" if row.seconds_per_resolved is None else f"{row.seconds_per_resolved:.1f}s"
    return (
        row.runner,
        f"{row.resolved}/{row.attempts if out_of is None else out_of}",
        str(row.tokens),
        f"${row.cost_usd:.4f}",
        f"{row.seconds:.1f}s",
        per_cost,
        per_time,
        f"{row.mean_rounds:.2f}",
    )


def side_by_side_table(rows: Sequence[RunnerFigures], *, out_of: int | None = None) -> str:
    """The runners one row each, columns aligned: resolved, tokens, cost, time, cost and time per
    resolved attempt, mean rounds."""
    return aligned([COLUMNS, *(cells(row, out_of=out_of) for row in rows)])


def aligned(table: Sequence[Sequence[str]]) -> str:
    """The rows one line each, every column as wide as its widest cell."""
    widths = [max(map(len, column)) for column in zip(*table, strict=True)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in table
    )
