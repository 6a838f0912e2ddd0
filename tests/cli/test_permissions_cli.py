"""A permission rule's ``ask`` is answered from another process with ``harness approve``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from harness.core.event_schema import PermissionEvent
from harness.memory.approval import ApprovalRequest
from harness.memory.inbox import Inbox
from harness.observe.events import read_events
from tests.cli.test_cli import harness, write_loop

ASKING_LOOP = """\
name = "asking"
goal = "make approved.txt and nothing else"
isolation = "none"
model = "scripted:author.json"
max_iterations = 1

[critic]
enabled = false

[[gates]]
type = "command"
name = "only approved"
cmd = "test -f approved.txt && test ! -f rejected.txt"

[permissions]
ask = ["run_shell(touch*)"]
deny = ["run_shell(git push*)"]
ask_timeout = 90
"""


def shell(command: str) -> dict[str, object]:
    return {"name": "run_shell", "arguments": {"command": command}}


def wait_for_action(inbox: Inbox, word: str, loop: subprocess.Popen[str]) -> ApprovalRequest:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and loop.poll() is None:
        request = inbox.pending()
        if request is not None and word in request.action:
            return request
        time.sleep(0.05)
    raise AssertionError(f"the agent never asked about {word}")


def test_an_ask_is_approved_and_another_rejected_from_a_second_process(tmp_path: Path) -> None:
    script = [
        shell("echo start && touch approved.txt"),
        shell("touch rejected.txt"),
        shell("sh -c 'git push'"),
        "done",
    ]
    (tmp_path / "author.json").write_text(json.dumps(script))
    write_loop(tmp_path, ASKING_LOOP)
    env = {k: v for k, v in os.environ.items() if k != "HARNESS_MODEL"}
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
        inbox = Inbox(tmp_path / "progress" / "asking.md")
        first = wait_for_action(inbox, "approved.txt", loop)
        assert first.round == 1
        assert "rule run_shell(touch*)" in first.action
        assert not (tmp_path / "approved.txt").exists()  # nothing ran before the answer
        status = harness("status", ".", cwd=tmp_path)
        assert "waiting for approval of an action: The agent asks to run run_shell: touch" in (
            status.stdout
        )
        approved = harness("approve", "loop.toml", cwd=tmp_path)
        assert approved.returncode == 0, approved.stderr
        assert "(approved)" in approved.stdout
        assert "approved.txt" in approved.stdout
        wait_for_action(inbox, "rejected.txt", loop)
        rejected = harness("approve", ".", "--reject", "not that one", cwd=tmp_path)
        assert rejected.returncode == 0, rejected.stderr
        assert "(rejected)" in rejected.stdout
        _, stderr = loop.communicate(timeout=90)
    finally:
        loop.kill()
    assert loop.returncode == 0, stderr[-2000:]
    assert (tmp_path / "approved.txt").exists()
    assert not (tmp_path / "rejected.txt").exists()
    assert inbox.pending() is None
    log = next((tmp_path / ".harness" / "runs").glob("*/events.jsonl"))
    decisions = [e for e in read_events(log) if isinstance(e, PermissionEvent)]
    assert [(e.verdict, e.decision, e.answer) for e in decisions] == [
        ("ask", "allowed", "approved"),
        ("ask", "denied", "rejected"),
        ("deny", "denied", None),
    ]
    assert decisions[0].subject == "touch approved.txt"
    assert decisions[2].rule == "run_shell(git push*)"
