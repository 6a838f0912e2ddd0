"""A person's time is not the loop's: the time budget stands still while a HumanGate waits."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from harness import Agent, Budget, CommandGate, HumanGate, OuterLoop, ScriptedModel, StopReason
from harness.core.errors import Stopped
from harness.memory.inbox import Inbox
from harness.models.budget import Meter
from harness.observe.events import EVENTS_FILE, EventLog
from harness.observe.report import render_text
from harness.observe.run_summary import load_run
from tests.outer.test_people import say

BUDGET = 6.0
WAIT = 7.0  # each answer comes later than the whole time budget


def slow_person(inbox: Inbox, answers: list[tuple[str, str]]) -> threading.Thread:
    """A person who takes WAIT seconds over each request before answering it."""

    def person() -> None:
        for decision, note in answers:
            deadline = time.monotonic() + 60
            while inbox.pending() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            request = inbox.pending()
            time.sleep(WAIT)
            inbox.answer(decision, note)  # type: ignore[arg-type]
            while inbox.pending() == request and time.monotonic() < deadline:
                time.sleep(0.05)

    thread = threading.Thread(target=person, daemon=True)
    thread.start()
    return thread


def test_a_late_answer_still_lands_and_the_report_shows_the_wait(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    progress = tmp_path / "progress" / "answer.md"
    run_dir = tmp_path / "run"
    model = ScriptedModel([*say("yes"), *say("yes, politely")])
    outer = OuterLoop(
        "out.txt says yes",
        Agent(model),
        gates=[
            CommandGate("grep -q yes out.txt", name="says yes"),
            HumanGate(timeout=60, interactive=False, poll_interval=0.05),
        ],
        workspace=work,
        isolation="none",
        progress=progress,
        budget=Budget(seconds=BUDGET),
        name="answer",
        events=EventLog(run_dir / EVENTS_FILE, run_id="wait"),
    )
    person = slow_person(Inbox(progress), [("rejected", "say it politely"), ("approved", "")])
    started = time.monotonic()
    result = outer.run()
    wall = time.monotonic() - started
    person.join(5)
    assert result.stop_reason is StopReason.PASSED, result.message  # not TIMEOUT
    assert result.iterations == 2
    assert [r.approval.outcome for r in result.rounds if r.approval] == ["rejected", "approved"]
    assert wall > 2 * WAIT > BUDGET
    assert 2 * WAIT <= result.waited < wall
    summary = load_run(run_dir)
    assert summary.waited == result.waited
    assert summary.duration >= result.waited  # wall time, the waits included
    header = render_text(summary).splitlines()[0]
    assert "waiting for a person" in header


def test_without_a_person_the_same_time_is_a_timeout(tmp_path: Path) -> None:
    """The bound the test above relies on: time outside a pause is counted."""
    now = [0.0]
    meter = Meter(Budget(seconds=BUDGET), clock=lambda: now[0])
    with meter.paused():
        now[0] += 2 * WAIT
    assert meter.waited == 2 * WAIT
    assert meter.elapsed == 0.0
    meter.check_time()  # still inside the budget
    now[0] += BUDGET
    assert meter.remaining_seconds() == 0.0
    with pytest.raises(Stopped) as stopped:
        meter.check_time()
    assert stopped.value.reason is StopReason.TIMEOUT


def test_an_unanswered_request_escalates_and_the_report_says_how_long_it_waited(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    progress = tmp_path / "progress" / "answer.md"
    outer = OuterLoop(
        "out.txt says yes",
        Agent(ScriptedModel(say("yes"))),
        gates=[
            CommandGate("grep -q yes out.txt", name="says yes"),
            HumanGate(timeout=1, interactive=False, poll_interval=0.05),
        ],
        workspace=work,
        isolation="none",
        progress=progress,
        budget=Budget(seconds=BUDGET),
        name="answer",
    )
    result = outer.run()
    assert result.stop_reason is StopReason.TIMEOUT
    assert 1 <= result.waited < BUDGET
    assert result.escalation is not None
    report = result.escalation.read_text()
    assert "- A person: timed out after 1." in report
    assert "(not counted against budget.seconds)" in report
