"""HumanGate: asked inline on a terminal, or through the inbox when unattended."""

from __future__ import annotations

import io
import os
import threading
import time
from pathlib import Path

import pytest

from harness import HumanGate
from harness.core.errors import ConfigError
from harness.memory.approval import ApprovalRequest
from harness.memory.inbox import Inbox

REQUEST = ApprovalRequest(loop="answer", round=2, summary="Changed: 1 file(s): out.txt")


def inline(answers: str, tmp_path: Path) -> tuple[str, str, str]:
    out = io.StringIO()
    gate = HumanGate(interactive=True, stdin=io.StringIO(answers), stdout=out)
    approval = gate.review(REQUEST, Inbox(tmp_path / "answer.md"))
    return approval.outcome, approval.note, out.getvalue()


@pytest.mark.parametrize(
    ("answers", "outcome", "note"),
    [
        ("y\n", "approved", ""),
        ("YES\n", "approved", ""),
        ("maybe\n\ny\n", "approved", ""),  # asked again until it is yes or no
        ("n use a table\n", "rejected", "use a table"),
        ("no\n\nshorter, please\n", "rejected", "shorter, please"),  # a note is asked for
        ("", "timed_out", ""),  # the input ended: nobody is there
    ],
)
def test_inline_answers(answers: str, outcome: str, note: str, tmp_path: Path) -> None:
    got_outcome, got_note, shown = inline(answers, tmp_path)
    assert (got_outcome, got_note) == (outcome, note)
    assert "Changed: 1 file(s): out.txt" in shown
    assert "Approve round 2?" in shown
    assert not Inbox(tmp_path / "answer.md").request_file.exists()  # inline never posts


def test_inline_waits_at_most_the_timeout_on_a_real_descriptor(tmp_path: Path) -> None:
    read, write = os.pipe()
    try:
        with os.fdopen(read) as stdin:
            gate = HumanGate(timeout=0.5, interactive=True, stdin=stdin, stdout=io.StringIO())
            started = time.monotonic()
            approval = gate.review(REQUEST, Inbox(tmp_path / "answer.md"))
        assert approval.outcome == "timed_out"
        assert time.monotonic() - started < 30  # nothing is written: only the timeout ends it
    finally:
        os.close(write)


def test_unattended_waits_for_an_answer_to_its_own_round(tmp_path: Path) -> None:
    inbox = Inbox(tmp_path / "progress" / "answer.md")
    gate = HumanGate(timeout=30, interactive=False, poll_interval=0.02, stdout=io.StringIO())

    def person() -> None:
        while inbox.pending() is None:
            time.sleep(0.02)
        inbox.answer_file.write_text('{"round": 1, "decision": "approved"}')  # a stale answer
        time.sleep(0.2)
        inbox.answer("rejected", "  not yet  ")

    threading.Thread(target=person, daemon=True).start()
    approval = gate.review(REQUEST, inbox)
    assert (approval.outcome, approval.note) == ("rejected", "not yet")
    assert approval.waited >= 0.2
    assert not inbox.request_file.exists()
    assert not inbox.answer_file.exists()


def test_unattended_gives_up_at_the_timeout(tmp_path: Path) -> None:
    out = io.StringIO()
    inbox = Inbox(tmp_path / "answer.md")
    gate = HumanGate(timeout=0.3, interactive=False, poll_interval=0.05, stdout=out)
    approval = gate.review(REQUEST, inbox)
    assert approval.outcome == "timed_out"
    assert 0.3 <= approval.waited < 30  # nobody answers: only the timeout ends it
    assert 'harness approve answer [--reject "note"]' in out.getvalue()
    assert not inbox.request_file.exists()


@pytest.mark.parametrize("kwargs", [{"timeout": 0}, {"poll_interval": -1}])
def test_bad_settings_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        HumanGate(**kwargs)
