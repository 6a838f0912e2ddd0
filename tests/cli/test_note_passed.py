"""``harness note`` on a loop that has passed says no round will read the note until a restart."""

from __future__ import annotations

from pathlib import Path

from harness.memory.progress import Progress
from harness.memory.progress_terms import Status
from tests.cli.test_cli import harness_here


def test_a_note_to_a_passed_loop_says_no_round_comes_without_a_restart(tmp_path: Path) -> None:
    progress = Progress(name="fix", goal="fix it", path=tmp_path / "progress" / "fix.md")
    progress.save()

    running = harness_here("note", "fix", "look at dates.py", cwd=tmp_path)
    assert running.returncode == 0, running.stderr
    assert running.stdout == "fix: note queued for the next round\n"

    progress.status = Status.PASSED
    progress.save()
    passed = harness_here("note", "fix", "look at dates.py", cwd=tmp_path)
    assert passed.returncode == 0, passed.stderr
    assert passed.stdout == (
        "fix: note queued, but the loop has passed: no round reads it until "
        "`harness run --restart` starts the loop again\n"
    )
    assert "for the next round" not in passed.stdout
