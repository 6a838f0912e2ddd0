"""Live progress: the status line, TTY redraws, quiet and JSON modes."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest

from harness.core.errors import ConfigError
from harness.core.event_schema import parse_event
from harness.core.redact import Redactor
from harness.observe.events import EventLog, read_events
from harness.observe.live import (
    LiveProgress,
    Mode,
    format_cost,
    format_duration,
    format_tokens,
)
from tests.conftest import event
from tests.event_fixtures import emit_sample_run


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class TTYStream(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_status_line_shows_round_step_tool_gates_critic_usage_and_time() -> None:
    clock = FakeClock()
    progress = LiveProgress(io.StringIO(), clock=clock)
    progress.emit(event("run_start", goal="g", model="m", max_iterations=10, workspace="."))
    progress.emit(event("round_start", round=1, max_iterations=10))
    progress.emit(event("critic_verdict", round=1, score=6.5, passed=False))
    progress.emit(event("round_start", round=2, max_iterations=10))
    progress.emit(event("model_call", role="author", model="m", prompt_tokens=11_000,
                  completion_tokens=1_300, cost_usd=0.041))  # fmt: skip
    progress.emit(event("tool_call", name="run_shell", step=7))
    progress.emit(
        event("gate_report", round=2, name="pytest", passed=False, failures=["a", "b", "c"])
    )
    clock.now += 42
    assert progress.status_line() == (
        "round 2/10 · step 7 · run_shell · gates: pytest ✗ (3 failing) · last critic 6.5 · "
        "12.3k tok · $0.041 · 00:42"
    )
    progress.emit(event("round_start", round=3, max_iterations=10))
    progress.emit(event("gate_report", round=3, name="ruff", passed=True))
    assert "· gates: ruff ✓ ·" in progress.status_line()
    progress.emit(event("round_start", round=4, max_iterations=10))
    assert "· last gates: ruff ✓ ·" in progress.status_line()


def test_live_mode_on_a_plain_stream_prints_lines(tmp_path: Path) -> None:
    stream = io.StringIO()
    log = EventLog(tmp_path / "events.jsonl", run_id="r1", redactor=Redactor(env={}),
                   echo=LiveProgress(stream, clock=FakeClock()))  # fmt: skip
    emit_sample_run(log)
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue()
    assert lines[0] == "round 1/3 · 0 tok · $0.000 · 00:00"
    assert lines[3:8] == [
        "round 1/3 · step 3 · run_shell · 4.0k tok · $0.0063 · 00:00",
        "round 1/3 · step 3 · running gates pytest, ruff · 4.0k tok · $0.0063 · 00:00",
        "round 1/3 · step 3 · run_shell · gates: pytest ✗ (3 failing) · 4.0k tok · $0.0063 · 00:00",
        "round 1/3 · step 3 · run_shell · gates: pytest ✗ (3 failing), ruff ✓ · 4.0k tok · "
        "$0.0063 · 00:00",
        "round 1/3 failed: pytest",
    ]
    assert any("critic 7.5" in line and line.startswith("round 3/3") for line in lines)
    assert [line for line in lines if " failed: " in line] == [
        "round 1/3 failed: pytest",
        "round 2/3 failed: critic 6.5/10",
        "round 3/3 failed: critic 7.5/10",
    ]
    assert lines[-3:] == [
        "stop: MAX_ITERATIONS — 3 of 3 rounds used",
        "escalated: MAX_ITERATIONS → progress/fix-calc.escalation.md",
        "MAX_ITERATIONS (not passed) after 3 round(s) · 17.1k tok · $0.024 · 00:43",
    ]


def test_live_mode_on_a_tty_redraws_one_line_per_round() -> None:
    stream = TTYStream()
    emit_sample_run(
        LiveProgress(stream, clock=FakeClock(), width=lambda: 200, tick=None), passes=True
    )
    output = stream.getvalue()
    assert output.count("\r\x1b[K") > 20
    finished_lines = output.split("\n")
    assert len(finished_lines) == 3 + 2 + 1  # a line per round, stop, final, trailing ""
    assert finished_lines[2].rsplit("\r\x1b[K", 1)[-1].startswith("round 3/3 · step 3")
    assert finished_lines[-2].endswith(
        "PASSED (passed) after 3 round(s) · 17.1k tok · $0.024 · 00:43"
    )


def test_quiet_mode_prints_nothing_the_command_prints_the_verdict() -> None:
    stream = TTYStream()
    emit_sample_run(LiveProgress(stream, mode="quiet"))
    assert stream.getvalue() == ""


def _busy(progress: LiveProgress) -> None:
    """A run in round 2 whose gates and critic have reported, now running a long command."""
    progress.emit(event("run_start", goal="g", model="m", max_iterations=10, workspace="."))
    progress.emit(event("round_start", round=2, max_iterations=10))
    progress.emit(event("model_call", role="author", model="m", prompt_tokens=11_000,
                  completion_tokens=1_300, cost_usd=0.041))  # fmt: skip
    for name in ("length", "required facts", "no hype", "structure", "links"):
        progress.emit(event("gate_report", round=2, name=name, passed=name != "links",
                      failures=["https://x.invalid"] if name == "links" else []))  # fmt: skip
    progress.emit(event("critic_verdict", round=2, score=6.5, passed=False))
    progress.emit(event("tool_start", name="run_shell", step=12,
                  arguments_preview='{"command": "python -m pytest -q tests/test_everything.py"}'))  # fmt: skip


@pytest.mark.parametrize("width", [79, 60, 45])
def test_a_long_status_line_is_shortened_to_the_width_keeping_what_matters(width: int) -> None:
    clock = FakeClock()
    progress = LiveProgress(io.StringIO(), clock=clock)
    _busy(progress)
    clock.now += 75
    full = progress.status_line()
    assert full == (
        "round 2/10 · step 12 · run_shell python -m pytest -q tests/test_everything.py · gates: "
        "length ✓, required facts ✓, no hype ✓, structure ✓, links ✗ (1 failing) · critic 6.5 · "
        "12.3k tok · $0.041 · 01:15"
    )
    line = progress.status_line(width)
    assert len(line) <= width
    assert not line.endswith("…"), line  # shortened part by part, not cut off
    for essential in ("2/10", "run_shell", "6.5", "12.3k", "$0.041", "01:15"):
        assert essential in line, line
    assert "gates: length" not in line  # the gate details went before the essentials
    if width >= 79:
        assert all(word in line for word in ("round 2/10", "critic 6.5", "12.3k tok"))


def test_the_running_command_is_shown_until_its_call_ends() -> None:
    progress = LiveProgress(io.StringIO(), clock=FakeClock())
    _busy(progress)
    assert "· run_shell python -m pytest -q tests/test_everything.py ·" in progress.status_line()
    progress.emit(event("tool_call", name="run_shell", step=12, exit_code=0))
    assert "· run_shell ·" in progress.status_line()


def test_on_a_terminal_the_line_is_redrawn_while_a_long_command_runs() -> None:
    stream = TTYStream()
    progress = LiveProgress(stream, width=lambda: 79, tick=0.02)
    _busy(progress)
    drawn = stream.getvalue().count("\r\x1b[K")
    deadline = time.monotonic() + 5
    while stream.getvalue().count("\r\x1b[K") < drawn + 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert stream.getvalue().count("\r\x1b[K") >= drawn + 3  # redrawn with no new event
    progress.emit(event("run_end", stop_reason="PASSED", passed=True, iterations=2,
                  usage={"prompt_tokens": 1, "completion_tokens": 1}, duration=1.0))  # fmt: skip
    after_end = stream.getvalue()
    time.sleep(0.1)
    assert stream.getvalue() == after_end  # the ticker stopped with the run
    for line in after_end.replace("\r\x1b[K", "\n").splitlines():
        assert len(line) <= 79, line


def test_a_note_opens_the_run() -> None:
    stream = io.StringIO()
    progress = LiveProgress(stream, clock=FakeClock())
    progress.emit(event("run_start", goal="g", model="m", max_iterations=3, workspace=".",
                  warning="/repo has uncommitted changes (a.txt)"))  # fmt: skip
    progress.emit(event("round_start", round=1, max_iterations=3))
    assert stream.getvalue().splitlines() == [
        "note: /repo has uncommitted changes (a.txt)",
        "round 1/3 · 0 tok · $0.000 · 00:00",
    ]


def test_json_mode_writes_each_event_as_a_json_line(tmp_path: Path) -> None:
    stream = io.StringIO()
    log = EventLog(tmp_path / "events.jsonl", run_id="r1", redactor=Redactor(env={}),
                   echo=LiveProgress(stream, mode="json"))  # fmt: skip
    emit_sample_run(log)
    echoed = [parse_event(line) for line in stream.getvalue().splitlines()]
    assert echoed == read_events(log.path)


def test_formats_and_bad_mode() -> None:
    assert [format_tokens(n) for n in (950, 12_345, 4_100_000)] == ["950", "12.3k", "4.1M"]
    assert [format_cost(c) for c in (0, 0.0063, 0.041, 12.345)] == [
        "$0.000",
        "$0.0063",
        "$0.041",
        "$12.35",
    ]
    assert [format_duration(s) for s in (42, 725, 3723)] == ["00:42", "12:05", "1:02:03"]
    with pytest.raises(ConfigError, match="mode"):
        LiveProgress(io.StringIO(), mode="loud")  # type: ignore[arg-type]


def test_agent_text_reaches_the_terminal_inert() -> None:
    from tests.core.test_text import ATTACK

    stream = TTYStream()
    progress = LiveProgress(stream, clock=FakeClock(), tick=None, width=lambda: 200)
    progress.emit(event("run_start", goal="g", model="m", max_iterations=2, workspace=".",
                  notes=[ATTACK]))  # fmt: skip
    progress.emit(event("round_start", round=1, max_iterations=2))
    progress.emit(event("tool_start", name="run_shell", arguments_preview=ATTACK, step=1))
    progress.emit(event("stop", reason="ERROR", message=ATTACK))
    shown = stream.getvalue().replace("\r\x1b[K", "")  # the redraw's own prefix
    for control in ("\x1b", "\x07", "\x9b", "\r"):
        assert control not in shown
    assert "note: all good PASSED2Jdone\n" in shown
    assert "stop: ERROR — all good PASSED2Jdone\n" in shown
    assert "run_shell all good PASSED2Jdone" in shown
    assert "Y3VybCBldmlsLnNoIHwgc2g=" not in shown  # the clipboard's payload is gone too


def test_json_mode_escapes_every_control_character_and_loses_nothing() -> None:
    import json

    from tests.core.test_text import ATTACK

    stream = io.StringIO()
    LiveProgress(stream, mode="json").emit(event("stop", reason="ERROR", message=ATTACK))
    line = stream.getvalue()
    assert line.isascii()
    assert "\x1b" not in line
    assert json.loads(line)["message"] == ATTACK


def test_while_the_round_is_judged_the_line_names_the_gates_then_the_critic() -> None:
    progress = LiveProgress(io.StringIO(), clock=FakeClock())
    progress.emit(event("round_start", round=1, max_iterations=10))
    progress.emit(event("tool_call", name="submit", step=4))
    assert progress.status_line().startswith("round 1/10 · step 4 · submit · ")
    progress.emit(event("checks_start", round=1, gates=["pytest", "ruff"], critic=True))
    assert progress.status_line().startswith("round 1/10 · step 4 · running gates pytest, ruff · ")
    assert "submit" not in progress.status_line()
    assert progress.status_line(width=40) == "1/10 gates 0 $0.000 00:00"
    progress.emit(event("gate_report", round=1, name="pytest", passed=True))
    assert "· running gates ruff · gates: pytest ✓ ·" in progress.status_line()
    progress.emit(event("gate_report", round=1, name="ruff", passed=True))
    assert "· running critic · gates: pytest ✓, ruff ✓ ·" in progress.status_line()
    progress.emit(event("critic_verdict", round=1, score=9.0, passed=True))
    assert "running" not in progress.status_line()
    assert "· submit · gates: pytest ✓, ruff ✓ · critic 9 ·" in progress.status_line()


@pytest.mark.parametrize(
    ("gates", "critic", "reports", "after"),
    [
        (
            ["pytest", "ruff"],
            True,
            [("pytest", False)],
            "· submit ·",
        ),  # the first failure ends them
        (["pytest"], False, [("pytest", True)], "· submit ·"),  # no critic to wait for
        ([], True, [], "· running critic ·"),  # a critic-only loop
        ([], False, [], "· submit ·"),
    ],
)
def test_the_judging_ends_with_the_first_failing_gate_or_the_last_check(
    gates: list[str], critic: bool, reports: list[tuple[str, bool]], after: str
) -> None:
    progress = LiveProgress(io.StringIO(), clock=FakeClock())
    progress.emit(event("round_start", round=1, max_iterations=10))
    progress.emit(event("tool_call", name="submit", step=1))
    progress.emit(event("checks_start", round=1, gates=gates, critic=critic))
    for name, passed in reports:
        progress.emit(event("gate_report", round=1, name=name, passed=passed))
    assert after in progress.status_line()


def test_a_failed_round_gets_a_line_naming_why_on_a_plain_stream_and_a_terminal() -> None:
    for stream in (io.StringIO(), TTYStream()):
        progress = LiveProgress(stream, clock=FakeClock(), width=lambda: 200, tick=None)
        progress.emit(event("round_start", round=3, max_iterations=10))
        progress.emit(event("round_end", round=3, passed=False, outcome="failed: pytest",
                            duration=1.0, cause="step cap of 40 reached"))  # fmt: skip
        progress.emit(event("round_start", round=4, max_iterations=10))
        progress.emit(event("round_end", round=4, passed=False, outcome="failed: critic 5.0/10",
                            duration=1.0))  # fmt: skip
        lines = [line.rsplit("\r\x1b[K", 1)[-1] for line in stream.getvalue().split("\n")]
        failed = [line for line in lines if "failed" in line]
        assert failed == [
            "round 3/10 failed: pytest; the session ended early: step cap of 40 reached",
            "round 4/10 failed: critic 5.0/10",
        ]


class ClosedPipe(io.StringIO):
    """A stream whose reader went away: every write fails as a closed pipe does."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


@pytest.mark.parametrize("mode", ["live", "json"])
def test_a_closed_stream_ends_the_output_not_the_run(mode: Mode) -> None:
    progress = LiveProgress(ClosedPipe(), mode, clock=FakeClock())
    assert not progress.closed
    progress.emit(event("round_start", round=1, max_iterations=10))  # raises nothing
    assert progress.closed
    progress.emit(event("tool_call", name="run_shell", step=1))
    assert progress.status_line().startswith("round 1/10 · step 1 · run_shell")


def test_an_escaped_secret_in_a_tool_call_is_not_shown_decoded(tmp_path: Path) -> None:
    """The line shows a tool call's first argument decoded from its JSON: a secret the model
    spelled there with escapes must reach it redacted, through the event log's redaction."""
    secret = "hunter2-hunter2-xyz"
    stream = TTYStream()
    progress = LiveProgress(stream, width=lambda: 200, tick=None)
    log = EventLog(
        tmp_path / "events.jsonl",
        run_id="r",
        redactor=Redactor(env={"MY_API_KEY": secret}),
        echo=progress,
    )
    escaped = secret.replace("-", "\\u002d")
    log.emit(event("tool_start", name="run_shell", arguments_preview=f'{{"command": "login {escaped}"}}', step=1))  # fmt: skip
    assert "· run_shell login [REDACTED] ·" in progress.status_line()
    assert secret not in stream.getvalue() + progress.status_line()
