"""Live progress of a run in the terminal, as an event sink.

Wire it as an :class:`harness.observe.events.EventLog`'s ``echo`` so it only ever sees redacted events.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from typing import Any, Literal, TextIO

from harness.core.errors import ConfigError
from harness.core.event_schema import (
    CriticVerdict,
    Escalation,
    EventBase,
    GateReportEvent,
    ModelCall,
    RoundStart,
    RunEnd,
    RunStart,
    Stop,
    ToolCallEvent,
    make_event,
)

Mode = Literal["live", "quiet", "json"]
MODES: tuple[Mode, ...] = ("live", "quiet", "json")

_STATUS_KINDS = {"round_start", "tool_call", "gate_report", "critic_verdict", "compaction"}
"""Events after which ``live`` mode on a plain stream prints a status line."""


def format_tokens(tokens: int) -> str:
    """``950``, ``12.3k``, ``4.1M``."""
    if tokens < 1000:
        return str(tokens)
    if tokens < 1_000_000:
        return f"{tokens / 1000:.1f}k"
    return f"{tokens / 1_000_000:.1f}M"


def format_cost(cost: float) -> str:
    """``$0.0063``, ``$0.041``, ``$12.35``."""
    if cost >= 10:
        return f"${cost:.2f}"
    return f"${cost:.4f}" if 0 < cost < 0.01 else f"${cost:.3f}"


def format_duration(seconds: float) -> str:
    """``00:42``, ``12:05``, ``1:02:03``."""
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def gate_mark(gate: GateReportEvent) -> str:
    """A gate's result in a few characters: ``✓``, ``✗``, ``✗ (3 failing)``."""
    if gate.passed:
        return "✓"
    return f"✗ ({len(gate.failures)} failing)" if gate.failures else "✗"


class LiveProgress:
    """Shows a run's progress on ``stream``.

    * ``live``: a status line (gates and critic as last reported) such as ``round 2/10 · step 7 · run_shell · gates: pytest ✗
      (3 failing) · critic 6.5 · 12.3k tok · $0.041 · 00:42`` — redrawn in place on a TTY,
      printed as a new line after each round start, tool call, gate, verdict or compaction
      otherwise — plus a line for each stop, escalation and the run's end.
    * ``json``: each event as one JSON line.
    * ``quiet``: only the final line when the run ends.
    """

    def __init__(
        self,
        stream: TextIO = sys.stderr,
        mode: Mode = "live",
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if mode not in MODES:
            raise ConfigError(f"mode: expected one of {', '.join(MODES)}, got {mode!r}")
        self.stream = stream
        self.mode = mode
        self._clock = clock
        self._started = clock()
        self._tty = stream.isatty()
        self._round = 0
        self._max_rounds = 0
        self._step = 0
        self._last_tool = ""
        self._gates: dict[str, str] = {}
        self._gates_round = 0
        self._critic: float | None = None
        self._critic_round = 0
        self._tokens = 0
        self._cost = 0.0

    def emit(self, kind: str, **data: Any) -> None:
        event = make_event(kind, **{"run_id": "", **data})
        self._update(event)
        if self.mode == "json":
            self._write_line(event.model_dump_json())
        elif isinstance(event, RunEnd):
            self._write_line(self._final_line(event))
        elif self.mode == "live":
            self._show(event)

    def status_line(self) -> str:
        """The current state in one line."""
        parts = [f"round {self._round}/{self._max_rounds}" if self._max_rounds else "starting"]
        if self._step:
            parts.append(f"step {self._step}")
        if self._last_tool:
            parts.append(self._last_tool)
        earlier = "last " if self._gates_round != self._round else ""
        if self._gates:
            parts.append(f"{earlier}gates: " + ", ".join(self._gates.values()))
        if self._critic is not None:
            earlier = "last " if self._critic_round != self._round else ""
            parts.append(f"{earlier}critic {self._critic:g}")
        parts += [
            f"{format_tokens(self._tokens)} tok",
            format_cost(self._cost),
            format_duration(self._clock() - self._started),
        ]
        return " · ".join(parts)

    def _update(self, event: EventBase) -> None:
        if isinstance(event, RoundStart):
            self._round, self._max_rounds = event.round, event.max_iterations
            self._step, self._last_tool = 0, ""
        elif isinstance(event, ModelCall):
            self._tokens += event.prompt_tokens + event.completion_tokens
            self._cost += event.cost_usd
        elif isinstance(event, ToolCallEvent):
            self._step = event.step if event.step is not None else self._step + 1
            self._last_tool = event.name
        elif isinstance(event, GateReportEvent):
            if self._gates_round != self._round:
                self._gates, self._gates_round = {}, self._round
            self._gates[event.name] = f"{event.name} {gate_mark(event)}"
        elif isinstance(event, CriticVerdict):
            self._critic, self._critic_round = event.score, self._round
        elif event.kind == "run_start":
            self._started = self._clock()

    def _show(self, event: EventBase) -> None:
        if isinstance(event, Stop):
            self._write_line(
                f"stop: {event.reason}" + (f" — {event.message}" if event.message else "")
            )
        elif isinstance(event, RunStart):
            for note in event.notes:
                self._write_line(f"note: {note}")
        elif isinstance(event, Escalation):
            where = f" → {event.report_path}" if event.report_path else ""
            self._write_line(f"escalated: {event.reason}{where}")
        elif self._tty:
            width = shutil.get_terminal_size().columns - 1
            self.stream.write("\r\x1b[K" + self.status_line()[:width])
            if event.kind == "round_end":
                self.stream.write("\n")
            self.stream.flush()
        elif event.kind in _STATUS_KINDS:
            self._write_line(self.status_line())

    def _final_line(self, event: RunEnd) -> str:
        verdict = "passed" if event.passed else "not passed"
        return (
            f"{event.stop_reason} ({verdict}) after {event.iterations} round(s) · "
            f"{format_tokens(event.usage.total_tokens)} tok · {format_cost(event.usage.cost_usd)} · "
            f"{format_duration(event.duration)}"
        )

    def _write_line(self, line: str) -> None:
        prefix = "\r\x1b[K" if self._tty and self.mode == "live" else ""
        self.stream.write(prefix + line + "\n")
        self.stream.flush()
