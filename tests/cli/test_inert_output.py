"""Text from data reaches the terminal inert through every command, not only those that thought
of it: the command line writes its standard output and error through one door that takes out
every escape sequence and control character (see docs/cli.md, "What reaches the terminal")."""

from __future__ import annotations

import io
from pathlib import Path

from harness.cli.main import main
from harness.core.text import InertStream
from harness.memory.approval import ApprovalRequest
from harness.memory.inbox import Inbox
from harness.observe.live import LiveProgress
from tests.cli.test_cli import harness
from tests.cli.test_cli_conventions import passing_loop
from tests.cli.test_replay_hostile import PAYLOAD, RAW


def test_an_agents_action_waiting_for_approval_reaches_status_and_approve_inert(
    tmp_path: Path,
) -> None:
    passing_loop(tmp_path)
    assert harness("run", "--quiet", "--max-iterations", "1", cwd=tmp_path).returncode == 0
    action = f"The agent asks to run run_shell: touch x{PAYLOAD} (rule run_shell(touch*))"
    progress = tmp_path / "progress" / "hello.md"
    Inbox(progress).ask(ApprovalRequest(loop="hello", round=1, summary=action, action=action))
    status = harness("status", cwd=tmp_path)
    approved = harness("approve", ".", cwd=tmp_path)
    assert approved.returncode == 0, approved.stderr
    for said in (status.stdout, approved.stdout):
        assert "run_shell: touch x" in said
        assert not RAW.search(said), repr(said)
        assert "\x1b" not in said


def test_both_streams_are_inert_while_a_command_runs_and_given_back_after(
    tmp_path: Path, capsys: object
) -> None:
    (tmp_path / "loop.toml").write_text(f'name = "x{PAYLOAD}"\ngoal = "g"\nmax_iterations = 0\n')
    code = main(["status", str(tmp_path)])
    out, err = capsys.readouterr()  # type: ignore[attr-defined]
    assert code == 2
    assert "loop.toml" in err
    assert not RAW.search(out + err), repr(out + err)
    assert "\x1b" not in out + err
    import sys

    assert not isinstance(sys.stdout, InertStream)
    assert not isinstance(sys.stderr, InertStream)


def test_the_live_display_draws_its_own_sequences_past_the_door() -> None:
    terminal = io.StringIO()
    live = LiveProgress(InertStream(terminal), mode="live")
    assert live.stream is terminal
    assert InertStream(terminal).write(f"a{PAYLOAD}b\n") == len(PAYLOAD) + 3
    assert terminal.getvalue().startswith("a")
    assert terminal.getvalue().endswith("b\n")
    assert not RAW.search(terminal.getvalue())
