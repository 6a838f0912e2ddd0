"""Running commands for real: start failures, the child's environment, bounded output."""

from __future__ import annotations

from pathlib import Path

from harness.proc import run_command


def test_a_missing_program_is_a_result_not_a_crash(tmp_path: Path) -> None:
    result = run_command(["no-such-binary-here", "--flag"], cwd=tmp_path, timeout=5)

    assert result.exit_code == 127
    assert not result.timed_out
    assert result.output.startswith("cannot start no-such-binary-here: ")
    assert "No such file or directory" in result.output


def test_a_missing_working_directory_is_a_result_not_a_crash(tmp_path: Path) -> None:
    result = run_command("echo hi", cwd=tmp_path / "gone", timeout=5)

    assert result.exit_code == 127
    assert result.output.startswith("cannot start /bin/sh: ")
    assert "gone" in result.output
