"""Running commands for real: start failures, the child's environment, bounded output."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.core.text import truncate
from harness.sandbox.command_env import safe_env
from harness.sandbox.process import run_command


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


MARKER = re.compile(r"\n?\[\.\.\. (\d+) characters truncated \.\.\.\]\n?")


def kept_and_cut(text: str) -> tuple[int, int]:
    """Characters kept around the marker, and the count the marker states."""
    match = MARKER.search(text)
    assert match is not None, text[:200]
    return len(text) - len(match.group(0)), int(match.group(1))


@given(
    text=st.text(min_size=0, max_size=400),
    limit=st.integers(min_value=40, max_value=300),
    head_share=st.sampled_from([0.0, 0.3, 0.5, 1.0]),
)
def test_truncate_never_exceeds_the_limit_and_counts_what_it_cut(
    text: str, limit: int, head_share: float
) -> None:
    cut = truncate(text, limit, head_share=head_share)

    assert len(cut) <= limit
    if len(text) <= limit:
        assert cut == text
    else:
        kept, counted = kept_and_cut(cut)
        assert kept + counted == len(text)


def test_truncate_keeps_the_ends_it_is_asked_for() -> None:
    text = "HEAD" + "x" * 1_000 + "TAIL"

    assert truncate(text, 100, head_share=0).startswith("[... ")
    assert truncate(text, 100, head_share=0).endswith("xTAIL")
    assert truncate(text, 100, head_share=1).startswith("HEADx")
    assert truncate(text, 100, head_share=1).endswith(" characters truncated ...]")
    assert truncate(text, 100).startswith("HEADx")
    assert truncate(text, 100).endswith("xTAIL")


def test_truncate_of_a_sample_counts_against_the_original_size() -> None:
    sample = "a" * 500 + "b" * 500  # the two ends of a 1 MB original

    kept, counted = kept_and_cut(truncate(sample, 200, total=1_000_000))

    assert kept + counted == 1_000_000


def test_huge_output_is_bounded_and_counted_in_characters(tmp_path: Path) -> None:
    code = "import sys; sys.stdout.write('START' + 'é' * 3_000_000 + 'END')"

    result = run_command([sys.executable, "-c", code], cwd=tmp_path, timeout=30, max_output=1_000)

    assert result.output_chars == 3_000_008
    assert len(result.output) <= 1_000
    assert result.output.startswith("STARTéé")
    assert result.output.endswith("ééEND")
    kept, counted = kept_and_cut(result.output)
    assert kept + counted == 3_000_008


def test_short_multibyte_output_is_counted_in_characters(tmp_path: Path) -> None:
    code = "import sys; sys.stdout.write('é' * 3_000)"

    result = run_command([sys.executable, "-c", code], cwd=tmp_path, timeout=30, max_output=1_000)

    assert result.output_chars == 3_000
    assert len(result.output) <= 1_000
    kept, counted = kept_and_cut(result.output)
    assert kept + counted == 3_000


def test_status_names_the_exit_code_or_the_timeout(tmp_path: Path) -> None:
    failed = run_command("exit 3", cwd=tmp_path, timeout=5)
    slow = run_command("sleep 30", cwd=tmp_path, timeout=0.3)

    assert failed.status == "exit code 3"
    assert slow.status == "timed out after 0.3s (process group killed)"
    assert slow.exit_code is None


@pytest.mark.parametrize(
    "name", ["OPENAI_API_KEY", "AZURE_OPENAI_KEY", "GEMINI_KEY", "AWS_BEARER_TOKEN_BEDROCK",
             "OPENAI_API_KEY_2", "DB_PASSWD", "SECRET_KEY_BASE", "AWS_SESSION_TOKEN"],
)  # fmt: skip
def test_every_secret_the_log_redacts_is_kept_from_child_processes(name: str) -> None:
    env = safe_env({name: "s3cret-value-123", "HOME": "/home/x", "TIKTOKEN_CACHE_DIR": "/c"})
    assert name not in env
    assert env["HOME"] == "/home/x"
    assert env["TIKTOKEN_CACHE_DIR"] == "/c"
