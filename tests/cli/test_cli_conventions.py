"""The command as a well-behaved Unix tool: results on stdout, progress and diagnostics on stderr,
quiet closed pipes, ``--version``, one-line errors with the right exit code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.memory.lock import LoopLock
from tests.cli.test_cli import ROOT, harness, harness_here, write_loop
from tests.conftest import git, make_repo

PASSING_LOOP = """\
name = "hello"
goal = "write hello.txt"
model = "scripted:script.json"
isolation = "none"
[critic]
enabled = false
[[gates]]
type = "command"
name = "hello exists"
cmd = "test -s hello.txt"
"""
WRITES_HELLO = [{"name": "write_file", "arguments": {"path": "hello.txt", "content": "hi"}}, "done"]

SCRIPTED = "the model is scripted (scripted:"
"""The label every run of a scripted model starts with, beside the notes a test looks at."""


def passing_loop(folder: Path) -> Path:
    write_loop(folder, PASSING_LOOP)
    (folder / "script.json").write_text(json.dumps(WRITES_HELLO))
    return folder


def harness_to_closed_pipe(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The command with its stdout a pipe nobody reads any more (as after ``| head -1``)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-m", "harness.cli.main", *args],
            cwd=cwd,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write_end)


def test_the_verdict_goes_to_stdout_and_the_progress_to_stderr(tmp_path: Path) -> None:
    result = harness("run", cwd=passing_loop(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "PASSED: round 1 passed every gate\n"
    assert "round 1/10" in result.stderr
    assert "PASSED: round 1" not in result.stderr


def test_quiet_prints_one_line_and_nothing_on_stderr(tmp_path: Path) -> None:
    result = harness("run", "--quiet", cwd=passing_loop(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["PASSED: round 1 passed every gate"]
    assert result.stderr == ""


def test_the_uncommitted_changes_note_comes_first_on_stderr(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    passing_loop(repo)
    config = 'progress = ".harness/hello.md"\n' + PASSING_LOOP.replace('"none"', '"worktree"')
    (repo / "loop.toml").write_text(config)
    (repo / ".gitignore").write_text(".harness/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "loop")
    (repo / "README.md").write_text("changed\n")
    result = harness("run", cwd=repo)
    assert result.returncode == 0, result.stderr
    first = result.stderr.splitlines()[0]
    assert first.startswith("note: ")
    assert "uncommitted changes (README.md)" in first
    assert "note:" not in result.stdout
    assert result.stdout.startswith("PASSED: round 1 passed every gate\n")


@pytest.mark.parametrize("command", [["runs"], ["report", "RUN"]])
def test_a_closed_pipe_ends_the_command_quietly(tmp_path: Path, command: list[str]) -> None:
    folder = passing_loop(tmp_path)
    assert harness("run", "--quiet", cwd=folder).returncode == 0
    (run_id,) = [p.name for p in (folder / ".harness" / "runs").iterdir()]
    args = [run_id if arg == "RUN" else arg for arg in command]
    result = harness_to_closed_pipe(*args, cwd=folder)
    assert result.stderr == ""
    assert result.returncode == 0


def test_report_html_is_written_even_when_the_reader_stops_early(tmp_path: Path) -> None:
    folder = passing_loop(tmp_path)
    assert harness("run", "--quiet", cwd=folder).returncode == 0
    (run_id,) = [p.name for p in (folder / ".harness" / "runs").iterdir()]
    result = harness_to_closed_pipe("report", run_id, "--html", "r.html", cwd=folder)
    assert "Traceback" not in result.stderr
    assert (folder / "r.html").read_text().startswith("<!DOCTYPE html>")


def test_version_names_the_installed_version() -> None:
    from importlib.metadata import version

    result = harness("--version", cwd=ROOT)
    assert result.returncode == 0
    assert result.stdout == f"harness {version('harness')}\n"


def test_critic_model_help_names_its_environment_variable() -> None:
    result = harness("run", "--help", cwd=ROOT)
    assert "HARNESS_CRITIC_MODEL" in " ".join(result.stdout.split())


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b'goal = "caf\xe9"\n', "not UTF-8 text (byte 11 is 0xe9); save it as UTF-8"),
        (b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n", "nested too deeply to read"),
    ],
)
def test_an_unreadable_loop_toml_is_a_configuration_error(
    tmp_path: Path, content: bytes, expected: str
) -> None:
    (tmp_path / "loop.toml").write_bytes(content)
    result = harness("run", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == f"harness: loop.toml: {expected}\n"


def test_a_missing_script_given_on_the_command_line_is_not_blamed_on_loop_toml(
    tmp_path: Path,
) -> None:
    passing_loop(tmp_path)
    result = harness("run", "--model", "scripted:missing.json", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("harness: --model: ")
    assert "missing.json" in result.stderr
    assert "loop.toml" not in result.stderr


def test_a_file_where_the_progress_folder_should_be_stops_the_run_naming_it(
    tmp_path: Path,
) -> None:
    passing_loop(tmp_path)
    (tmp_path / "blocker").write_text("a file where the progress folder should be\n")
    (tmp_path / "loop.toml").write_text('progress = "blocker/hello.md"\n' + PASSING_LOOP)
    result = harness("run", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.startswith("ERROR: ")
    assert "'blocker' on its path is a symlink or not a folder" in result.stdout
    assert "Traceback" not in result.stderr


def test_an_os_error_is_one_line_and_exit_1_and_debug_shows_the_traceback(
    tmp_path: Path,
) -> None:
    passing_loop(tmp_path)
    assert harness("run", "--quiet", cwd=tmp_path).returncode == 0
    (run,) = (tmp_path / ".harness" / "runs").iterdir()
    result = harness("report", run.name, "--html", "/dev/full", cwd=tmp_path)  # no space left
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("harness: ")
    assert "/dev/full" in result.stderr
    debug = harness("--debug", "report", run.name, "--html", "/dev/full", cwd=tmp_path)
    assert debug.returncode == 1
    assert "Traceback (most recent call last)" in debug.stderr


def test_a_gate_failing_the_same_way_outside_git_ends_with_no_progress(tmp_path: Path) -> None:
    write_loop(tmp_path, PASSING_LOOP.replace('"scripted:script.json"', '"scripted:s.json"'))
    (tmp_path / "s.json").write_text(json.dumps([f"attempt {n}" for n in range(1, 6)]))
    result = harness("run", "--quiet", "--max-iterations", "5", cwd=tmp_path)
    assert result.returncode == 3, result.stderr
    assert result.stdout == (
        "NO_PROGRESS: the last 3 rounds failed gate 'hello exists' with the same output\n"
    )


def test_a_round_cut_short_by_an_error_is_counted_everywhere(tmp_path: Path) -> None:
    passing_loop(tmp_path)
    (tmp_path / "script.json").write_text(json.dumps([]))  # the first model call fails
    result = harness("run", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.startswith("ERROR: round 1 failed: ScriptExhausted")
    assert "ERROR (not passed) after 1 round(s)" in result.stderr
    runs = harness("runs", cwd=tmp_path)
    header, row = runs.stdout.split("\n")[:2]
    assert header.split() == ["run", "started", "outcome", "rounds", "cost", "goal"]
    assert row.split()[3:6] == ["ERROR", "1", "$0.000"]  # one round, as the verdict says
    assert runs.stdout.endswith(" write hello.txt\n")  # no blank line after the table


def test_the_text_report_counts_tool_calls_under_that_name(tmp_path: Path) -> None:
    folder = passing_loop(tmp_path)
    assert harness("run", "--quiet", cwd=folder).returncode == 0
    (run_id,) = [p.name for p in (folder / ".harness" / "runs").iterdir()]
    text = harness("report", run_id, cwd=folder).stdout
    (header,) = [line for line in text.splitlines() if line.lstrip().startswith("round")]
    assert header.split()[:3] == ["round", "outcome", "tools"]  # not "steps": the agent's
    # steps are model replies (2 here: the write and the answer), as the escalation report says


def test_the_harness_own_progress_files_are_not_the_users_uncommitted_changes(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n", ".gitignore": ".harness/\n"})
    passing_loop(repo)
    (repo / "loop.toml").write_text(PASSING_LOOP.replace('"none"', '"worktree"'))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "loop")
    first = harness("run", cwd=repo)
    assert first.returncode == 0, first.stderr
    assert (repo / "progress" / "hello.md").is_file()  # untracked, beside its lock file
    again = harness("run", "--restart", cwd=repo)
    assert again.returncode == 0, again.stderr
    assert "uncommitted" not in again.stderr
    (repo / "README.md").write_text("changed\n")
    mine = harness("run", "--restart", cwd=repo)
    notes = [
        line
        for line in mine.stderr.splitlines()
        if line.startswith("note: ") and SCRIPTED not in line
    ]
    assert len(notes) == 2  # the run's warning (the user's own change), then the earlier branch
    assert "uncommitted changes (README.md)" in notes[0]
    assert notes[1].startswith("note: the earlier run's branch harness/hello.")


def test_a_restart_names_the_branch_it_leaves_only_once_it_goes_ahead(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n", ".gitignore": ".harness/\n"})
    passing_loop(repo)
    (repo / "loop.toml").write_text(PASSING_LOOP.replace('"none"', '"worktree"'))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "loop")
    assert harness("run", "--quiet", cwd=repo).returncode == 0
    (branch,) = git(repo, "branch", "--list", "harness/*", "--format=%(refname:short)").split()

    # in this process: the model library is imported once, not in a process of its own
    unknown = harness_here("run", "--restart", "--model", "nosuchprovider/model", cwd=repo)
    assert unknown.returncode == 2, unknown.stderr
    assert unknown.stderr.startswith("harness: ")
    assert "note:" not in unknown.stderr  # refused by the preflight: nothing was left
    with LoopLock(repo / "progress" / "hello.md"):
        held = harness("run", "--restart", cwd=repo)
    assert held.returncode == 2, held.stderr
    assert "note:" not in held.stderr  # refused: the loop runs elsewhere

    went = harness("run", "--restart", cwd=repo)
    assert went.returncode == 0, went.stderr
    assert [
        line
        for line in went.stderr.splitlines()
        if line.startswith("note: ") and SCRIPTED not in line
    ] == [
        f"note: the earlier run's branch {branch} is left as it was; `harness clean` removes "
        "it (and its worktree, if it has one)"
    ]


def test_a_full_disk_is_a_system_error_not_bad_usage(tmp_path: Path) -> None:
    folder = passing_loop(tmp_path)
    assert harness("run", "--quiet", cwd=folder).returncode == 0
    (run_id,) = [p.name for p in (folder / ".harness" / "runs").iterdir()]
    full = harness("report", run_id, "--html", "/dev/full", cwd=folder)
    assert full.returncode == 1
    assert full.stderr == "harness: /dev/full: No space left on device\n"
    missing = harness("report", run_id, "--html", "no/such/dir/r.html", cwd=folder)
    assert missing.returncode == 2  # a path that cannot be written to is the user's to fix
