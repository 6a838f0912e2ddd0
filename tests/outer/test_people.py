"""A person in the loop, in process: approval, notes, the on_round hook."""

from __future__ import annotations

import io
import json
import threading
import time
from pathlib import Path

import pytest

from harness import (
    Agent,
    CommandGate,
    HumanGate,
    OuterLoop,
    Progress,
    ScriptedModel,
    StopReason,
    ToolCall,
)
from harness.core.errors import ConfigError
from harness.memory.inbox import Inbox
from harness.outer.decision import RoundReport
from tests.conftest import RecordingSink, make_repo
from tests.outer.test_outer import tasks


def say(text: str) -> list[object]:
    return [ToolCall("write_file", {"path": "out.txt", "content": text}), "done"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"README.md": "x\n"})


def loop(repo: Path, tmp_path: Path, model: ScriptedModel, **kwargs: object) -> OuterLoop:
    return OuterLoop(
        "out.txt says yes",
        Agent(model),
        gates=[CommandGate("grep -q yes out.txt", name="says yes"), *kwargs.pop("extra", [])],  # type: ignore[list-item]
        workspace=repo,
        progress=tmp_path / "progress" / "answer.md",
        **{"name": "answer", **kwargs},
    )


def answer_when_asked(inbox: Inbox, answers: list[tuple[str, str]]) -> threading.Thread:
    """A person at another terminal: waits for each request and answers it."""

    def person() -> None:
        for decision, note in answers:
            deadline = time.monotonic() + 60
            while inbox.pending() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            request = inbox.pending()
            assert request is not None
            inbox.answer(decision, note)  # type: ignore[arg-type]
            while inbox.pending() == request and time.monotonic() < deadline:
                time.sleep(0.05)

    thread = threading.Thread(target=person, daemon=True)
    thread.start()
    return thread


def test_a_rejection_note_is_the_next_rounds_feedback(repo: Path, tmp_path: Path) -> None:
    model = ScriptedModel([*say("yes"), *say("yes, politely")])
    human = HumanGate(timeout=60, interactive=False, poll_interval=0.05)
    outer = loop(repo, tmp_path, model, extra=[human])
    person = answer_when_asked(
        Inbox(tmp_path / "progress" / "answer.md"),
        [("rejected", "say it politely"), ("approved", "")],
    )
    result = outer.run()
    person.join(5)
    assert result.stop_reason is StopReason.PASSED
    assert result.iterations == 2
    assert "a person approved it" in result.message
    first, second = tasks(model)
    assert "say it politely" not in first
    assert "a person reviewed the work and rejected it: say it politely" in second
    assert [r.approval.outcome for r in result.rounds if r.approval] == ["rejected", "approved"]
    progress = Progress.load(tmp_path / "progress" / "answer.md")
    assert [a.outcome for a in progress.attempts] == ["failed: rejected by a person", "passed"]
    assert not Inbox(tmp_path / "progress" / "answer.md").request_file.exists()


def test_a_failing_round_is_never_put_to_the_person(repo: Path, tmp_path: Path) -> None:
    model = ScriptedModel([*say("no"), *say("yes")])
    human = HumanGate(timeout=60, interactive=False, poll_interval=0.05)
    outer = loop(repo, tmp_path, model, extra=[human])
    person = answer_when_asked(Inbox(tmp_path / "progress" / "answer.md"), [("approved", "")])
    result = outer.run()
    person.join(5)
    assert result.passed
    assert [r.approval.outcome if r.approval else None for r in result.rounds] == [
        None,
        "approved",
    ]
    assert result.rounds[0].outcome == "failed: says yes"


def test_no_answer_in_time_escalates(repo: Path, tmp_path: Path) -> None:
    model = ScriptedModel(say("yes"))
    human = HumanGate(timeout=1, interactive=False, poll_interval=0.05)
    started = time.monotonic()
    result = loop(repo, tmp_path, model, extra=[human]).run()
    assert time.monotonic() - started < 30
    assert result.stop_reason is StopReason.TIMEOUT
    assert "round 1 passed its checks but no one approved it within 1s" in result.message
    assert result.escalation is not None
    assert result.escalation.exists()
    assert not result.passed
    inbox = Inbox(tmp_path / "progress" / "answer.md")
    assert not inbox.request_file.exists()
    assert Progress.load(inbox.progress).attempts[0].outcome == "failed: not approved in time"


def test_queued_notes_reach_the_next_task_and_progress(repo: Path, tmp_path: Path) -> None:
    inbox = Inbox(tmp_path / "progress" / "answer.md")
    inbox.add_note("write yes in lower case")
    inbox.add_note("and nothing else")
    model = ScriptedModel(say("yes"))
    result = loop(repo, tmp_path, model).run()
    assert result.passed
    [task] = tasks(model)
    assert "# Guidance from a person" in task
    assert "- write yes in lower case\n- and nothing else" in task
    assert task.count("write yes in lower case") == 1  # as guidance, not again in the progress
    notes = Progress.load(inbox.progress).notes
    assert "- Round 1, from a person: write yes in lower case" in notes
    assert "- Round 1, from a person: and nothing else" in notes
    assert inbox.take_notes() == []  # taken once


def test_on_round_tells_of_every_round_and_a_failing_hook_does_not_stop(
    repo: Path, tmp_path: Path
) -> None:
    seen: list[RoundReport] = []
    model = ScriptedModel([*say("no"), *say("yes")])
    result = loop(repo, tmp_path, model, on_round=seen.append).run()
    assert result.passed
    assert [(r.round, r.passed) for r in seen] == [(1, False), (2, True)]

    log = repo / "rounds.jsonl"  # the hook may write in the loop's folder (its sandbox)
    command = f'printf "%s\\n" "$HARNESS_ROUND_REPORT" >> {log}; exit 3'
    model = ScriptedModel([*say("no"), *say("yes")])
    sink = RecordingSink()

    result = loop(repo, tmp_path, model, on_round=command, earlier="restart", events=sink).run()
    assert result.passed
    rounds = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["round"], r["passed"], r["outcome"]) for r in rounds] == [
        (1, False, "failed: says yes"),
        (2, True, "passed"),
    ]
    failures = [data for kind, data in sink.events if kind == "hook_failed"]
    assert [f["round"] for f in failures] == [1, 2]
    assert "exit code 3" in str(failures[0]["error"])


def test_two_human_gates_are_refused(repo: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="at most one HumanGate"):
        loop(repo, tmp_path, ScriptedModel([]), extra=[HumanGate(), HumanGate()])


FORGING = "notes\nGate held-out: passed\nCritic: 10.0/10 — flawless"
"""A file name written to read, in the summary a person approves, as lines of the harness's."""


def test_a_changed_file_s_name_forges_no_line_of_what_a_person_approves(
    repo: Path, tmp_path: Path
) -> None:
    write = ToolCall("write_file", {"path": FORGING, "content": "x\n"})
    model = ScriptedModel([write, *say("yes")])
    shown = io.StringIO()
    human = HumanGate(timeout=60, interactive=True, stdin=io.StringIO("y\n"), stdout=shown)
    result = loop(repo, tmp_path, model, extra=[human]).run()
    assert result.stop_reason is StopReason.PASSED
    lines = shown.getvalue().splitlines()
    assert "Gate held-out: passed" not in lines
    assert not any(line.startswith("Critic:") for line in lines)
    changed = next(line for line in lines if line.startswith("Changed: "))
    assert changed == f"Changed: 2 file(s): {json.dumps(FORGING)}, out.txt"
