"""The inbox: approval requests and answers, and the notes queue, shared between processes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.core.errors import ConfigError
from harness.memory.approval import ApprovalRequest
from harness.memory.inbox import Inbox
from tests.cli.test_cli import ROOT


def test_an_answer_needs_a_pending_request(tmp_path: Path) -> None:
    inbox = Inbox(tmp_path / "progress" / "loop.md")
    with pytest.raises(ConfigError, match="the loop is not waiting for approval"):
        inbox.answer("approved")
    inbox.ask(ApprovalRequest(loop="loop", round=3, summary="s"))
    assert inbox.answer_for(3) is None
    inbox.answer("rejected", "redo the table")
    answer = inbox.answer_for(3)
    assert answer is not None
    assert (answer.decision, answer.note) == ("rejected", "redo the table")
    assert inbox.answer_for(4) is None  # an answer counts only for the round it names
    inbox.close()
    assert inbox.pending() is None
    assert inbox.answer_for(3) is None


def test_asking_again_drops_an_old_answer(tmp_path: Path) -> None:
    inbox = Inbox(tmp_path / "loop.md")
    inbox.ask(ApprovalRequest(loop="loop", round=1, summary="s"))
    inbox.answer("approved")
    inbox.ask(ApprovalRequest(loop="loop", round=1, summary="s"))
    assert inbox.answer_for(1) is None


def test_notes_from_many_processes_are_all_taken_once_in_order(tmp_path: Path) -> None:
    inbox = Inbox(tmp_path / "loop.md")
    script = (
        "import sys; from harness.memory.inbox import Inbox; from pathlib import Path\n"
        "inbox = Inbox(Path(sys.argv[1]))\n"
        "for i in range(50): inbox.add_note(f'{sys.argv[2]}-{i}')\n"
    )
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(inbox.progress), name],
            cwd=ROOT,
        )
        for name in ("a", "b", "c")
    ]
    for writer in writers:
        assert writer.wait(60) == 0
    notes = inbox.take_notes()
    assert sorted(notes) == sorted(f"{n}-{i}" for n in "abc" for i in range(50))
    assert [n for n in notes if n.startswith("a-")] == [f"a-{i}" for i in range(50)]
    assert inbox.take_notes() == []


def test_a_torn_line_is_dropped_and_empty_notes_refused(tmp_path: Path) -> None:
    inbox = Inbox(tmp_path / "loop.md")
    inbox.add_note("first")
    with inbox.notes_file.open("a") as queue:
        queue.write('{"text": "half')
    assert inbox.take_notes() == ["first"]
    with pytest.raises(ConfigError, match="the text is empty"):
        inbox.add_note("   ")
