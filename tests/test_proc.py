"""Running commands for real: start failures, the child's environment, bounded output."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from harness.proc import run_command, safe_env


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


def test_the_child_finds_the_python_that_runs_harness_first_on_path(tmp_path: Path) -> None:
    bin_dir = str(Path(sys.executable).parent)
    env = safe_env({"PATH": "/usr/bin:/bin"})

    result = run_command(["sh", "-c", 'command -v python; echo "$PATH"'], cwd=tmp_path, timeout=5)
    inherited = run_command("echo $PATH", cwd=tmp_path, timeout=5, env=env)

    assert env["PATH"] == f"{bin_dir}{os.pathsep}/usr/bin:/bin"
    assert inherited.output.strip() == env["PATH"]
    assert result.output.splitlines()[1].split(os.pathsep)[0] == bin_dir
    if (Path(bin_dir) / "python").exists():
        assert result.output.splitlines()[0] == str(Path(bin_dir) / "python")


def test_the_python_directory_is_not_added_twice() -> None:
    bin_dir = str(Path(sys.executable).parent)
    first = safe_env({"PATH": f"{bin_dir}{os.pathsep}/bin"})

    assert safe_env(first) == first
    assert first["PATH"] == f"{bin_dir}{os.pathsep}/bin"
