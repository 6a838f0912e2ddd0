"""``harness watch --once`` with nothing due says so, and when the schedule fires next."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from tests.cli.test_cli import harness


def test_once_with_nothing_due_says_so_and_when_the_schedule_fires_next(tmp_path: Path) -> None:
    (tmp_path / "loop.toml").write_text(
        'name = "yearly"\ngoal = "tidy up"\nmodel = "scripted:none.json"\n'
        '[[triggers]]\ntype = "schedule"\ncron = "0 0 1 1 *"\n'
    )
    result = harness("watch", "--once", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    year = datetime.now(UTC).year + 1
    assert result.stderr.splitlines() == [
        "watching yearly: schedule",
        f"yearly: nothing was due; the schedule fires next at {year}-01-01 00:00 UTC",
    ]
    assert not (tmp_path / ".harness" / "runs").exists()  # no run started
