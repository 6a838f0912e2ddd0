"""A person steers a running loop from another terminal: harness approve and harness note."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from harness.memory.inbox import Inbox
from harness.memory.progress import Progress
from tests.cli.test_cli import harness, write_loop

HUMAN_LOOP = """\
name = "answer"
goal = "out.txt says yes"
isolation = "none"
model = "scripted:author.json"
max_iterations = 3
on_round = "echo round >> $HARNESS_WORKSPACE/rounds.log"

[critic]
enabled = false

[[gates]]
type = "command"
name = "says yes"
cmd = "grep -q yes out.txt"

[[gates]]
type = "human"
timeout = 120
"""


def say(text: str) -> list[object]:
    return [{"name": "write_file", "arguments": {"path": "out.txt", "content": text}}, "done"]


def wait_for_request(inbox: Inbox, round_number: int) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        request = inbox.pending()
        if request is not None and request.round == round_number:
            return
        time.sleep(0.1)
    raise AssertionError(f"the loop never asked about round {round_number}")


def test_rejected_from_another_process_then_approved(tmp_path: Path) -> None:
    (tmp_path / "author.json").write_text(json.dumps([*say("yes"), *say("yes, politely")]))
    write_loop(tmp_path, HUMAN_LOOP)
    env = dict(os.environ)
    env.pop("HARNESS_MODEL", None)
    loop = subprocess.Popen(
        [sys.executable, "-m", "harness.cli.main", "run", "--json"],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        inbox = Inbox(tmp_path / "progress" / "answer.md")
        wait_for_request(inbox, 1)
        noted = harness("note", "answer", "keep it to one line", cwd=tmp_path)
        assert noted.returncode == 0, noted.stderr
        rejected = harness("approve", ".", "--reject", "say it politely", cwd=tmp_path)
        assert rejected.returncode == 0, rejected.stderr
        assert "answer: round 1 rejected" in rejected.stdout
        wait_for_request(inbox, 2)
        approved = harness("approve", "loop.toml", cwd=tmp_path)
        assert approved.returncode == 0, approved.stderr
        assert "answer: round 2 approved" in approved.stdout
        stdout, stderr = loop.communicate(timeout=90)
    finally:
        loop.kill()
    assert loop.returncode == 0, stderr
    events = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    tasks = [e["task"] for e in events if e["kind"] == "round_start"]
    assert len(tasks) == 2
    assert "say it politely" not in tasks[0]
    assert "keep it to one line" not in tasks[0]
    assert "rejected it: say it politely" in tasks[1]
    assert "# Guidance from a person" in tasks[1]
    assert "- keep it to one line" in tasks[1]
    approvals = [(e["round"], e["outcome"], e["note"]) for e in events if e["kind"] == "approval"]
    assert approvals == [(1, "rejected", "say it politely"), (2, "approved", "")]
    progress = Progress.load(tmp_path / "progress" / "answer.md")
    assert [a.outcome for a in progress.attempts] == ["failed: rejected by a person", "passed"]
    assert "- Round 2, from a person: keep it to one line" in progress.notes
    assert (tmp_path / "rounds.log").read_text() == "round\nround\n"  # on_round ran each round
    assert not inbox.request_file.exists()


def test_approve_without_a_waiting_loop_is_exit_2(tmp_path: Path) -> None:
    write_loop(tmp_path, HUMAN_LOOP)
    run = harness("approve", cwd=tmp_path)
    assert run.returncode == 2
    assert "answer: the loop is not waiting for approval" in run.stderr
    unknown = harness("note", "nosuchloop", "hello", cwd=tmp_path)
    assert unknown.returncode == 2
    assert "nosuchloop: not a loop.toml" in unknown.stderr
    empty = harness("note", ".", "  ", cwd=tmp_path)
    assert empty.returncode == 2
    assert "the text is empty" in empty.stderr
