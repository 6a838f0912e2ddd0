"""What a run did, read back from its event log; and the list of runs.

Run folders live at ``<root>/.harness/runs/<run_id>/`` with ``events.jsonl`` inside.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from harness.core.errors import ConfigError
from harness.core.event_schema import (
    Compaction,
    ConnectorEvent,
    CriticVerdict,
    Escalation,
    Event,
    EventBase,
    GateReportEvent,
    ModelCall,
    ModelSwitch,
    RoundEnd,
    RoundStart,
    RunEnd,
    RunStart,
    Stop,
    ToolCallEvent,
)
from harness.core.usage import Usage
from harness.observe.events import EVENTS_FILE, read_events
from harness.observe.live import format_tokens

E = TypeVar("E", bound=EventBase)

RUNS_DIR = Path(".harness") / "runs"
"""Where run folders live, relative to the project root."""


@dataclass(frozen=True)
class RoundSummary:
    """One round: its steps (tool calls), model usage, gates, verdict and compactions."""

    round: int
    started: datetime
    ended: datetime | None
    passed: bool | None
    outcome: str
    duration: float
    usage: Usage
    steps: tuple[ToolCallEvent, ...]
    gates: tuple[GateReportEvent, ...]
    verdict: CriticVerdict | None
    compactions: tuple[Compaction, ...]


@dataclass(frozen=True)
class RunSummary:
    """A run as its event log tells it. ``stop_reason`` is None for a run that has not stopped."""

    run_id: str
    path: Path
    goal: str
    model: str
    critic_model: str | None
    max_iterations: int
    started: datetime | None
    duration: float
    stop_reason: str | None
    stop_message: str
    passed: bool
    usage: Usage
    rounds: tuple[RoundSummary, ...]
    escalation: Escalation | None
    notes: tuple[str, ...] = ()
    waited: float = 0.0  # seconds of ``duration`` spent waiting for a person
    connectors: tuple[ConnectorEvent, ...] = ()  # what the connectors did as the run ended
    loop_name: str | None = None  # the loop's name, as the run recorded it
    branch: str | None = None  # the run's branch, as the run recorded it at its start
    by_model: tuple[tuple[str, Usage], ...] = ()  # the author's calls, by model in order of use
    switches: tuple[ModelSwitch, ...] = ()  # a cascade's moves to its next model

    @property
    def outcome(self) -> str:
        """The stop reason, or ``incomplete`` for a run still going or killed."""
        return self.stop_reason or "incomplete"

    @property
    def compactions(self) -> tuple[Compaction, ...]:
        return tuple(c for r in self.rounds for c in r.compactions)


@dataclass(frozen=True)
class RunInfo:
    """One line of ``harness runs``."""

    run_id: str
    path: Path
    started: datetime | None
    outcome: str
    passed: bool
    rounds: int
    cost_usd: float
    goal: str
    loop: str = ""  # the loop's name ("" when the run recorded none)


def round_failures(r: RoundSummary) -> list[str]:
    """What failed a round, one line each: failed gates with their failures, the critic's
    reasons and fixes when it did not pass."""
    notes = [
        f"gate {g.name} failed ({g.summary})" + (f": {', '.join(g.failures)}" if g.failures else "")
        for g in r.gates
        if not g.passed
    ]
    if r.verdict and not r.verdict.passed:
        notes += [f"critic {r.verdict.score:g}: {reason}" for reason in r.verdict.reasons]
        notes += [f"fix: {fix}" for fix in r.verdict.fixes]
    return notes


def round_notes(r: RoundSummary) -> list[str]:
    """A round's notes for a report, as plain text: its failures, then its compactions."""
    return round_failures(r) + [
        f"compaction ({c.strategy}): {format_tokens(c.tokens_before)} → "
        f"{format_tokens(c.tokens_after)} tokens"
        for c in r.compactions
    ]


def find_run(ref: str | os.PathLike[str], *, root: str | os.PathLike[str] = ".") -> Path:
    """The run folder for ``ref``: a folder holding ``events.jsonl``, or a run id under ``root``."""
    for candidate in (Path(ref), Path(root) / RUNS_DIR / str(ref)):
        if (candidate / EVENTS_FILE).is_file():
            return candidate
    raise ConfigError(
        f"run: no run folder or run id {str(ref)!r} (looked in {Path(root) / RUNS_DIR})"
    )


def load_run(run_dir: str | os.PathLike[str]) -> RunSummary:
    """Summarise the run in ``run_dir`` from its event log."""
    path = Path(run_dir)
    events = read_events(path / EVENTS_FILE)
    run_events, round_events = _split_rounds(events)
    start = _last(run_events, RunStart)
    end = _last(run_events, RunEnd)
    stop = _last(run_events, Stop)
    if end is not None:
        usage, duration = end.usage, end.duration
    else:
        usage = _sum_calls(_all(events, ModelCall))
        duration = (events[-1].ts - events[0].ts).total_seconds() if events else 0.0
    return RunSummary(
        run_id=events[0].run_id if events else path.name,
        path=path,
        goal=start.goal if start else "",
        loop_name=start.loop_name if start else None,
        branch=start.branch if start else None,
        model=start.model if start else "",
        critic_model=start.critic_model if start else None,
        max_iterations=start.max_iterations if start else 0,
        started=start.ts if start else None,
        duration=duration,
        stop_reason=end.stop_reason if end else stop.reason if stop else None,
        stop_message=stop.message if stop else "",
        passed=end.passed if end else False,
        usage=usage,
        rounds=tuple(_round_summary(start, group) for start, group in round_events),
        escalation=_last(run_events, Escalation),
        notes=(*([start.warning] if start.warning else []), *start.notes) if start else (),
        waited=end.waited if end else 0.0,
        connectors=tuple(_all(run_events, ConnectorEvent)),
        by_model=_by_model(_all(events, ModelCall)),
        switches=tuple(_all(events, ModelSwitch)),
    )


def _by_model(calls: list[ModelCall]) -> tuple[tuple[str, Usage], ...]:
    """The author's calls summed by model, in the order the models were first called."""
    names = dict.fromkeys(call.model for call in calls if call.role == "author")
    return tuple(
        (name, _sum_calls([c for c in calls if c.role == "author" and c.model == name]))
        for name in names
    )


def _split_rounds(
    events: list[Event],
) -> tuple[list[Event], list[tuple[RoundStart, list[Event]]]]:
    """Run-level events, and each round's start with its events up to its ``round_end``."""
    run_level: list[Event] = []
    rounds: list[tuple[RoundStart, list[Event]]] = []
    open_round = False
    for event in events:
        if isinstance(event, RoundStart):
            rounds.append((event, []))
            open_round = True
        elif open_round and not isinstance(event, RunStart | RunEnd | Stop | Escalation):
            rounds[-1][1].append(event)
            open_round = not isinstance(event, RoundEnd)
        else:
            run_level.append(event)
    return run_level, rounds


def _round_summary(start: RoundStart, events: list[Event]) -> RoundSummary:
    end = _last(events, RoundEnd)
    return RoundSummary(
        round=start.round,
        started=start.ts,
        ended=end.ts if end else None,
        passed=end.passed if end else None,
        outcome=end.outcome if end else "incomplete",
        duration=end.duration
        if end
        else ((events[-1].ts if events else start.ts) - start.ts).total_seconds(),
        usage=_sum_calls(_all(events, ModelCall)),
        steps=tuple(_all(events, ToolCallEvent)),
        gates=tuple(_all(events, GateReportEvent)),
        verdict=_last(events, CriticVerdict),
        compactions=tuple(_all(events, Compaction)),
    )


def _all(events: list[Event], kind: type[E]) -> list[E]:
    return [event for event in events if isinstance(event, kind)]


def _last(events: list[Event], kind: type[E]) -> E | None:
    found = _all(events, kind)
    return found[-1] if found else None


def _sum_calls(calls: list[ModelCall]) -> Usage:
    return sum(
        (
            Usage(c.prompt_tokens, c.completion_tokens, c.cost_usd, 1, c.unpriced, c.cached_tokens)
            for c in calls
        ),
        Usage(),
    )


UNREADABLE = "unreadable"
"""The outcome :func:`list_runs` gives a run whose event log cannot be read."""


def list_runs(runs_root: str | os.PathLike[str]) -> list[RunInfo]:
    """The runs under ``runs_root`` (a ``.harness/runs`` folder), newest first.

    A run whose event log cannot be read is listed last, with outcome :data:`UNREADABLE`;
    ``harness report`` on it names the bad line.
    """
    root = Path(runs_root)
    if not root.is_dir():
        return []
    infos = [_run_info(run_dir) for run_dir in root.iterdir() if (run_dir / EVENTS_FILE).is_file()]
    return sorted(infos, key=lambda info: (info.started is not None, info.started), reverse=True)


def _run_info(run_dir: Path) -> RunInfo:
    try:
        run = load_run(run_dir)
    except ConfigError:
        return RunInfo(run_dir.name, run_dir, None, UNREADABLE, False, 0, 0.0, "")
    return RunInfo(
        run_id=run.run_id,
        path=run_dir,
        started=run.started,
        outcome=run.outcome,
        passed=run.passed,
        rounds=len(run.rounds),
        cost_usd=run.usage.cost_usd,
        goal=run.goal,
        loop=run.loop_name or "",
    )
