"""Live progress of a run in the terminal, as an event sink.

Wire it as an :class:`harness.observe.events.EventLog`'s ``echo`` so it only ever sees redacted events.
Agent text reaches the terminal inert: no escape sequence or control character gets through.
"""

from __future__ import annotations

import json
import shutil
import sys
import threading
import time
from collections.abc import Callable
from typing import Literal, TextIO

from harness.core.errors import ConfigError
from harness.core.event_schema import (
    ChecksStart,
    CriticVerdict,
    Escalation,
    EventBase,
    GateReportEvent,
    ModelCall,
    RoundEnd,
    RoundStart,
    RunEnd,
    RunStart,
    Stop,
    ToolCallEvent,
    ToolStart,
)
from harness.core.text import compact_json, inert, one_line, raw_stream

Mode = Literal["live", "quiet", "json"]
MODES: tuple[Mode, ...] = ("live", "quiet", "json")

_STATUS_KINDS = {
    "round_start",
    "tool_call",
    "checks_start",
    "gate_report",
    "critic_verdict",
    "compaction",
}
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


def argument_preview(arguments_json: str, *, limit: int) -> str:
    """A tool call's main argument in at most ``limit`` characters: ``pytest -q tests``."""
    try:
        arguments = json.loads(arguments_json)
    except ValueError:
        arguments = arguments_json
    if isinstance(arguments, dict):  # its first text
        arguments = next((value for value in arguments.values() if isinstance(value, str)), "")
    text = one_line(inert(str(arguments)))
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


TICK_SECONDS = 1.0
"""How often ``live`` mode on a terminal redraws the line while nothing else happens."""


class LiveProgress:
    """Shows a run's progress on ``stream``.

    * ``live``: a status line such as ``round 2/10 · step 7 · run_shell pytest -q · gates:
      pytest ✗ (3 failing) · critic 6.5 · 12.3k tok · $0.041 · 00:42`` (gates and critic as last
      reported; the tool is the one running, or the last one; once the session is over, what
      judges it now: ``running gates pytest, ruff`` then ``running critic``). A round that fails
      gets a line of its own naming why: ``round 3/10 failed: pytest; the session ended early:
      step cap of 40 reached``. On a terminal it is redrawn in
      place, every second too so the time runs on during a long command, and shortened to fit
      the width (see :meth:`status_line`; round, tool, critic, tokens, cost and time stay). On any other stream it is printed as a new line after
      each round start, tool call, gate, verdict or compaction. A ``note:`` line starts the
      run when there is something to know (uncommitted changes left behind), a line follows
      each stop and escalation, and one the run's end.
    * ``json``: each event as one JSON line.
    * ``quiet``: nothing (the command prints the verdict).
    """

    def __init__(
        self,
        stream: TextIO = sys.stderr,
        mode: Mode = "live",
        *,
        clock: Callable[[], float] = time.monotonic,
        width: Callable[[], int] | None = None,
        tick: float | None = TICK_SECONDS,
    ) -> None:
        if mode not in MODES:
            raise ConfigError(f"mode: expected one of {', '.join(MODES)}, got {mode!r}")
        self.stream = raw_stream(stream)  # its line drawn with its own control sequences
        self.mode = mode
        self._clock = clock
        self._width = width or (lambda: shutil.get_terminal_size().columns - 1)
        self._tick = tick
        self._started = clock()
        self._tty = stream.isatty()
        self._lock = threading.RLock()
        self._ticker: threading.Thread | None = None
        self._done = threading.Event()
        self.closed = False
        """The stream's reader went away (a closed pipe); nothing is written to it since."""
        self._round = 0
        self._max_rounds = 0
        self._step = 0
        self._last_tool = ""
        self._running = ""  # the argument preview of the tool running now
        self._checking: list[str] = []  # the gates judging the round now, until they report
        self._critic_next = False  # the critic judges once the gates have passed
        self._phase = ""  # "gates" or "critic" while they judge the round, else ""
        self._gates: dict[str, GateReportEvent] = {}
        self._gates_round = 0
        self._critic: float | None = None
        self._critic_round = 0
        self._tokens = 0
        self._cost = 0.0

    def emit(self, event: EventBase) -> None:
        with self._lock:
            self._update(event)
            if self.mode == "json":  # ASCII: every control character escaped
                self._write_line(compact_json(event.model_dump(mode="json")))
            elif self.mode == "quiet":
                return
            elif isinstance(event, RunEnd):
                self._done.set()
                self._write_line(self._final_line(event))
            else:
                self._show(event)

    def status_line(self, width: int | None = None) -> str:
        """The current state in one line, shortened to ``width`` characters when given.

        Shortening drops, in turn, the step, the gate details (leaving a count), the argument
        preview's tail, the gate count, the argument, and finally the words: ``2/10 run_shell
        c6.5 12.3k $0.041 01:15``.
        """
        levels: list[tuple[int, str, bool, bool]] = [
            (60, "full", True, False),
            (60, "full", False, False),
            (60, "count", False, False),
            (20, "count", False, False),
            (20, "none", False, False),
            (0, "none", False, False),
            (0, "none", False, True),
        ]
        line = ""
        for detail, gates, with_step, compact in levels:
            line = self._compose(detail, gates, with_step, compact)
            if width is None or len(line) <= width:
                return line
        return line[: max((width or 0) - 1, 0)] + "…"

    def _compose(self, detail: int, gates: str, with_step: bool, compact: bool) -> str:
        rounds = f"{self._round}/{self._max_rounds}" if self._max_rounds else "starting"
        parts = [rounds if compact or not self._max_rounds else f"round {rounds}"]
        if self._step and with_step:
            parts.append(f"step {self._step}")
        if self._phase:
            names = ", ".join(self._checking) if self._phase == "gates" and detail else ""
            parts.append(self._phase if compact else f"running {self._phase} {names}".rstrip())
        elif self._last_tool:
            preview = argument_preview(self._running, limit=detail) if detail else ""
            parts.append(f"{self._last_tool} {preview}".rstrip())
        earlier = "last " if self._gates_round != self._round else ""
        if self._gates and gates == "full":
            marks = ", ".join(f"{g.name} {gate_mark(g)}" for g in self._gates.values())
            parts.append(f"{earlier}gates: {marks}")
        elif self._gates and gates == "count":
            passed = sum(g.passed for g in self._gates.values())
            parts.append(f"{earlier}gates {passed}/{len(self._gates)} ✓")
        if self._critic is not None:
            earlier = "last " if self._critic_round != self._round else ""
            parts.append(f"c{self._critic:g}" if compact else f"{earlier}critic {self._critic:g}")
        tokens = format_tokens(self._tokens)
        parts += [
            tokens if compact else f"{tokens} tok",
            format_cost(self._cost),
            format_duration(self._clock() - self._started),
        ]
        return (" " if compact else " · ").join(parts)

    def _update(self, event: EventBase) -> None:
        if isinstance(event, RoundStart):
            self._round, self._max_rounds = event.round, event.max_iterations
            self._step, self._last_tool, self._running, self._phase = 0, "", "", ""
        elif isinstance(event, ModelCall):
            self._tokens += event.prompt_tokens + event.completion_tokens
            self._cost += event.cost_usd
        elif isinstance(event, ToolStart):
            self._step = event.step if event.step is not None else self._step
            self._last_tool, self._running = event.name, event.arguments_preview
        elif isinstance(event, ToolCallEvent):
            self._step = event.step if event.step is not None else self._step + 1
            self._last_tool, self._running = event.name, ""
        elif isinstance(event, ChecksStart):
            self._checking, self._critic_next = list(event.gates), event.critic
            self._phase = "gates" if event.gates else "critic" if event.critic else ""
        elif isinstance(event, GateReportEvent):
            if self._gates_round != self._round:
                self._gates, self._gates_round = {}, self._round
            self._gates[event.name] = event
            if self._phase == "gates":  # the gates stop at the first that fails
                self._checking = [name for name in self._checking if name != event.name]
                if not event.passed or not self._checking:
                    self._phase = "critic" if self._critic_next and event.passed else ""
        elif isinstance(event, CriticVerdict):
            self._critic, self._critic_round = event.score, self._round
            self._phase = ""
        elif isinstance(event, RunStart):
            self._started = self._clock()

    def _show(self, event: EventBase) -> None:
        if isinstance(event, RunStart):
            if event.warning:
                self._write_line(f"note: {event.warning}")
            for note in event.notes:
                self._write_line(f"note: {note}")
            if self._tty and self._tick:
                self._start_ticker()
        elif isinstance(event, Stop):
            self._write_line(
                f"stop: {event.reason}" + (f" — {event.message}" if event.message else "")
            )
        elif isinstance(event, Escalation):
            where = f" → {event.report_path}" if event.report_path else ""
            self._write_line(f"escalated: {event.reason}{where}")
        elif isinstance(event, RoundEnd) and not event.passed:
            self._phase = ""
            self._write_line(self._failed_line(event))
        elif self._tty:
            self._redraw(newline=event.kind == "round_end")
        elif event.kind in _STATUS_KINDS:
            self._write_line(self.status_line())

    def _write(self, text: str) -> None:
        """Write and flush; a closed pipe (``| head``) ends the output, never the run."""
        if self.closed:
            return
        try:
            self.stream.write(text)
            self.stream.flush()
        except BrokenPipeError:
            self.closed = True
            self._done.set()  # the ticker has nowhere to draw

    def _redraw(self, *, newline: bool = False) -> None:
        line = inert(self.status_line(self._width()), multiline=False)
        self._write("\r\x1b[K" + line + ("\n" if newline else ""))

    def _start_ticker(self) -> None:
        """Redraw every ``tick`` seconds until the run ends (a daemon: it never holds up exit)."""

        def tick() -> None:
            assert self._tick is not None
            while not self._done.wait(self._tick):
                with self._lock:
                    if not self._done.is_set():
                        self._redraw()

        self._ticker = threading.Thread(target=tick, name="harness-live", daemon=True)
        self._ticker.start()

    def _failed_line(self, event: RoundEnd) -> str:
        """``round 3/10 failed: pytest; the session ended early: step cap of 40 reached``."""
        cap = f"/{self._max_rounds}" if self._max_rounds else ""
        cause = f"; the session ended early: {event.cause}" if event.cause else ""
        return f"round {event.round}{cap} {event.outcome}{cause}"

    def _final_line(self, event: RunEnd) -> str:
        verdict = "passed" if event.passed else "not passed"
        return (
            f"{event.stop_reason} ({verdict}) after {event.iterations} round(s) · "
            f"{format_tokens(event.usage.total_tokens)} tok · {format_cost(event.usage.cost_usd)} · "
            f"{format_duration(event.duration)}"
        )

    def _write_line(self, line: str) -> None:
        prefix = "\r\x1b[K" if self._tty and self.mode == "live" else ""
        self._write(prefix + inert(line) + "\n")
