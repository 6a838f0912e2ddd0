"""A round that fails says why as it happens, and the verdict names the last round's failure:
the gate that failed, and the session's own end when it was cut short (step cap, stuck, ...).
A run that could not do its work safely (a repository with no commit) is refused up front."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from harness.observe.events import read_events
from tests.cli.test_cli import harness, write_loop
from tests.cli.test_cli_conventions import PASSING_LOOP, WRITES_HELLO, harness_to_closed_pipe
from tests.conftest import git, make_repo

pytestmark = pytest.mark.slow

CAPPED_LOOP = """\
name = "capped"
goal = "write hello.txt"
model = "scripted:script.json"
isolation = "none"
max_iterations = 2
patience = 5
[agent]
max_steps = 1
[critic]
enabled = false
[[gates]]
type = "command"
name = "hello exists"
cmd = "test -s hello.txt"
"""
NOTE = {"name": "write_file", "arguments": {"path": "notes.txt", "content": "thinking"}}


def test_a_round_cut_short_by_the_step_cap_says_so_live_and_in_the_verdict(
    tmp_path: Path,
) -> None:
    write_loop(tmp_path, CAPPED_LOOP)
    (tmp_path / "script.json").write_text(json.dumps([NOTE, NOTE]))
    result = harness("run", cwd=tmp_path)
    assert result.returncode == 3, result.stderr
    failed = [
        line
        for line in result.stderr.splitlines()
        if line.startswith("round ") and " failed: " in line
    ]
    assert failed == [
        "round 1/2 failed: hello exists; the session ended early: step cap of 1 reached",
        "round 2/2 failed: hello exists; the session ended early: step cap of 1 reached",
    ]
    assert "round 1/2 · step 1 · running gates hello exists · " in result.stderr
    assert result.stdout.splitlines()[0] == (
        "MAX_ITERATIONS: no round passed in 2 round(s), the round cap (round 2 failed: "
        "hello exists; the session ended early: step cap of 1 reached)"
    )


def test_a_git_repository_without_a_commit_is_refused_not_edited_in_place(tmp_path: Path) -> None:
    project = tmp_path / "new"
    write_loop(project, PASSING_LOOP.replace('isolation = "none"\n', ""))
    (project / "script.json").write_text(json.dumps(WRITES_HELLO))
    git(project, "init", "-q")
    result = harness("run", cwd=project)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr == (
        f"harness: {project.resolve()} is a git repository with no commits yet, so a run has no "
        "commit to branch from and would edit your files in place: make a first commit (`git "
        'add -A && git commit -m "first commit"`), or set isolation = "none" in loop.toml to '
        "work in place\n"
    )
    assert sorted(p.name for p in project.iterdir()) == [".git", "loop.toml", "script.json"]
    (project / "loop.toml").write_text(PASSING_LOOP)  # isolation = "none": in place, said so
    assert harness("run", "--quiet", cwd=project).returncode == 0
    assert (project / "hello.txt").read_text() == "hi"


@pytest.mark.parametrize(
    ("script", "code", "stop"), [(WRITES_HELLO, 0, "PASSED"), (["no file"], 3, "MAX_ITERATIONS")]
)
@pytest.mark.parametrize("json_mode", [True, False])
def test_a_closed_stdout_neither_ends_the_run_nor_hides_how_it_ended(
    tmp_path: Path, script: list[object], code: int, stop: str, json_mode: bool
) -> None:
    write_loop(tmp_path, "max_iterations = 1\n" + PASSING_LOOP)
    (tmp_path / "script.json").write_text(json.dumps(script))
    args = ("run", "--json") if json_mode else ("run",)
    result = harness_to_closed_pipe(*args, cwd=tmp_path)
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    assert "ERROR" not in result.stderr
    (run,) = (tmp_path / ".harness" / "runs").iterdir()
    (end,) = [e for e in read_events(run / "events.jsonl") if e.kind == "run_end"]
    assert end.stop_reason == stop  # the run went on to its own end
    if json_mode:
        assert result.stderr == (
            "harness: the reader of the output went away; the run went on to its end "
            f"({stop}); `harness report {run.name}` shows it\n"
        )


def test_an_unreachable_provider_leaves_no_branch_or_worktree_and_the_next_run_starts_afresh(
    tmp_path: Path,
) -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there
    project = make_repo(tmp_path / "project", {"README.md": "hi\n"})
    base = f"http://127.0.0.1:{port}/v1"
    write_loop(
        project,
        'name = "far"\ngoal = "write hello.txt"\nmodel = "openai/test-model"\n'
        f'[model_options]\napi_key = "sk-test"\napi_base = "{base}"\nnum_retries = 0\n'
        '[critic]\nenabled = false\n[[gates]]\ntype = "command"\ncmd = "test -s hello.txt"\n',
    )
    git(project, "add", "-A")
    git(project, "commit", "-qm", "loop")
    for _ in range(2):  # the second run is a new start, not a resume of a branch that is gone
        result = harness("run", cwd=project)
        assert result.returncode == 1, result.stderr
        verdict = result.stdout.splitlines()
        assert verdict[0] == (
            "ERROR: round 1 failed: model error: model openai/test-model: cannot reach API base "
            f"URL {base}: connection refused for {base}/chat/completions ([Errno 111] Connection "
            "refused), gave up after 1 attempt"
        )
        assert not any(line.startswith("work is on branch") for line in verdict)
        assert (
            "note: no round did any work, so nothing is kept: removed its branch harness/far."
            in (result.stderr)
        )
        assert git(project, "branch", "--format=%(refname:short)") == "main"
        assert len(git(project, "worktree", "list").splitlines()) == 1
        status = harness("status", cwd=project).stdout
        assert status.startswith("far: not started, round 0")
