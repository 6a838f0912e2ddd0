"""`[agent] runner` and `harness run --runner`: a program as the session, run as a person runs
it; bad values exit 2 naming the field or the flag before anything is created."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.cli.test_cli import harness, harness_here
from tests.conftest import git, make_repo

pytestmark = pytest.mark.slow

AGENT = Path(__file__).parents[1] / "runners" / "chat_agent.py"
BUGGY = "def add(a, b):\n    return a - b\n"
RIGHT = "def add(a, b):\n    return a + b\n"
TESTS = "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"
BASE = 'name = "calc"\ngoal = "make the tests pass"\nmodel = "scripted:../script.json"\n'
GATES = '[critic]\nenabled = false\n[[gates]]\ntype = "pytest"\nargs = "tests"\n'


def _repo(tmp_path: Path, agent: str) -> Path:
    script = [{"name": "write_file", "arguments": {"path": "calc.py", "content": RIGHT}}, "fixed"]
    (tmp_path / "script.json").write_text(json.dumps(script))
    files = {"calc.py": BUGGY, "tests/test_calc.py": TESTS, "loop.toml": BASE + agent + GATES}
    return make_repo(tmp_path / "repo", files)


def _nothing_created(repo: Path) -> bool:
    return git(repo, "branch", "--format=%(refname:short)") == "main" and not git(
        repo, "status", "--porcelain", "--untracked-files=all"
    )


def test_a_command_runner_named_in_loop_toml_passes_the_round(tmp_path: Path) -> None:
    command = json.dumps([sys.executable, str(AGENT), "{task_file}"])
    repo = _repo(tmp_path, f'[agent]\nrunner = "command"\ncommand = {command}\n')
    result = harness("run", "--quiet", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert "PASSED" in result.stdout
    branch = git(repo, "branch", "--format=%(refname:short)", "--list", "harness/*")
    assert git(repo, "show", f"{branch}:calc.py") + "\n" == RIGHT


def test_an_external_session_s_time_limit_is_set_in_loop_toml(tmp_path: Path) -> None:
    agent = '[agent]\nrunner = "command"\ncommand = ["sleep", "60"]\nsession_timeout = 1.5\n'
    repo = _repo(tmp_path, agent)
    started = time.monotonic()
    result = harness("run", "--quiet", "--max-iterations", "1", cwd=repo)
    assert time.monotonic() - started < 30  # not the command's 60 s
    assert result.returncode == 3, result.stdout + result.stderr  # escalated: the round cap
    assert "the session ended early: the agent ran past its time limit of 1.5s" in result.stdout
    (events,) = (repo / ".harness" / "runs").glob("*/events.jsonl")
    ends = [e for e in map(json.loads, events.read_text().splitlines()) if e["kind"] == "round_end"]
    assert [(e["passed"], e["cause"]) for e in ends] == [
        (False, "the agent ran past its time limit of 1.5s")
    ]


@pytest.mark.parametrize("bad", ["0", "-1", "inf", '"soon"'])
def test_a_bad_session_time_limit_exits_2_naming_it(tmp_path: Path, bad: str) -> None:
    agent = f'[agent]\nrunner = "command"\ncommand = ["true"]\nsession_timeout = {bad}\n'
    repo = _repo(tmp_path, agent)
    result = harness("run", "--quiet", cwd=repo)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "agent.session_timeout" in result.stderr
    assert _nothing_created(repo)


def test_a_command_whose_script_lies_under_the_hosts_tmp_is_found_in_the_sandbox(
    tmp_path: Path,
) -> None:
    """The sandbox's /tmp is its own: a script the command names by absolute path there is
    shown read-only, so the round runs it (and cannot change it)."""
    script = Path(tempfile.mkdtemp(prefix="agent-", dir="/tmp")) / "chat_agent.py"
    script.write_text(AGENT.read_text())
    command = json.dumps([sys.executable, str(script), "{task_file}"])
    repo = _repo(tmp_path, f'[agent]\nrunner = "command"\ncommand = {command}\n')
    result = harness("run", "--quiet", cwd=repo)
    shutil.rmtree(script.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "can't open file" not in result.stdout
    branch = git(repo, "branch", "--format=%(refname:short)", "--list", "harness/*")
    assert git(repo, "show", f"{branch}:calc.py") + "\n" == RIGHT


def test_the_runner_flag_overrides_the_file_and_is_checked_with_it(tmp_path: Path) -> None:
    command = json.dumps([sys.executable, str(AGENT)])
    repo = _repo(tmp_path, "")
    result = harness_here("run", "--runner", "command", cwd=repo)
    assert result.returncode == 2
    assert "field 'agent.command': required when agent.runner = 'command'" in result.stderr
    result = harness_here("run", "--runner", "cursor", cwd=repo)
    assert result.returncode == 2
    assert "--runner: expected one of harness, claude-code, codex, aider" in result.stderr
    assert _nothing_created(repo)
    (repo / "loop.toml").write_text(BASE + f"[agent]\ncommand = {command}\n" + GATES)
    git(repo, "commit", "-qam", "a command, for the flag")
    result = harness("run", "--quiet", "--runner", "command", cwd=repo)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    ("agent", "message"),
    [
        ('runner = "command"\ncommand = ["no-such-agent-program"]\n',
         "agent.command: 'no-such-agent-program' is not on PATH"),
        ('runner = "claude-code"\npath = "bin/claude"\n', "is not an executable file"),
        ('runner = "gemini"\n', "field 'agent.runner'"),
    ],
)  # fmt: skip
def test_a_runner_that_cannot_run_exits_2_before_anything_is_created(
    tmp_path: Path, agent: str, message: str
) -> None:
    repo = _repo(tmp_path, "[agent]\n" + agent)
    result = harness_here("run", cwd=repo)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert _nothing_created(repo)


@pytest.mark.parametrize("runner", ["claude-code", "codex", "aider", "mini-swe-agent"])
def test_an_agent_that_is_not_installed_exits_2_with_its_install_command(
    tmp_path: Path, runner: str
) -> None:
    from harness.runners import runner_class

    found = runner_class(runner)
    bare = tmp_path / "bin"  # a PATH with git alone on it: no agent there
    bare.mkdir()
    git_program = shutil.which("git")
    assert git_program is not None
    (bare / "git").symlink_to(git_program)
    repo = _repo(tmp_path, f'[agent]\nrunner = "{runner}"\n')
    result = harness_here("run", cwd=repo, env={"PATH": str(bare)})
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"needs {found.executable!r}, which is not on PATH" in result.stderr
    assert f"install it with: {found.install} (or name it in [agent] path)" in result.stderr
    assert "Traceback" not in result.stderr
    assert _nothing_created(repo)


def test_runners_side_by_side_are_attempts_under_the_same_checks(tmp_path: Path) -> None:
    command = json.dumps([sys.executable, str(AGENT), "{task_file}"])
    repo = _repo(tmp_path, f"[agent]\ncommand = {command}\n")
    result = harness("run", "--runner", "command,harness", cwd=repo)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("attempt 1 (command): PASSED")
    assert lines[1].startswith("attempt 2 (harness): PASSED")
    assert lines[-1].startswith("winner: attempt ")
    for number in (1, 2):  # each attempt's branch holds the fix, whoever made it
        branch = git(repo, "branch", "--format=%(refname:short)", "--list", f"*attempt-{number}*")
        assert git(repo, "show", f"{branch}:calc.py") + "\n" == RIGHT
    bad = harness_here("run", "--runner", "command,gemini", cwd=repo)
    assert bad.returncode == 2
    assert "--runner: expected one of harness, claude-code, codex" in bad.stderr


def test_a_batch_task_names_its_runner_and_each_is_judged_the_same(tmp_path: Path) -> None:
    command = json.dumps([sys.executable, str(AGENT), "{task_file}"])
    _repo(tmp_path, f"[agent]\ncommand = {command}\n")
    tasks = [
        {"name": "by-command", "loop": "repo/loop.toml", "runner": "command"},
        {"name": "by-harness", "loop": "repo/loop.toml"},
    ]
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    out = tmp_path / "out"
    result = harness("batch", "tasks.jsonl", "--out", str(out), "--quiet", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    records = {
        r["name"]: r for r in (json.loads(p.read_text()) for p in out.glob("tasks/*/record.json"))
    }
    assert {name: r["status"] for name, r in records.items()} == {
        "by-command": "passed", "by-harness": "passed",
    }  # fmt: skip
    # Each task's requests: the program sends the task alone, the harness's agent its prompt too.
    runs = tmp_path / "repo" / ".harness" / "runs"
    recorded = {n: "".join(p.read_text() for p in (runs / r["run_id"]).glob("*.jsonl"))
                for n, r in records.items()}  # fmt: skip
    assert "You are a careful software agent" in recorded["by-harness"]
    assert "You are a careful software agent" not in recorded["by-command"]
    assert "make the tests pass" in recorded["by-command"]
    (tmp_path / "tasks.jsonl").write_text(json.dumps({**tasks[0], "runner": "cursor"}) + "\n")
    bad = harness("batch", "tasks.jsonl", "--out", str(tmp_path / "bad"), cwd=tmp_path)
    assert bad.returncode == 2
    assert "runner" in bad.stderr


ANSWERING = Path(__file__).parents[1] / "realworld" / "answering_agent.py"
"""A real program that asks the model through the gateway once and changes nothing."""


def test_attempts_by_runner_are_compared_side_by_side_with_what_each_earned(
    tmp_path: Path,
) -> None:
    command = json.dumps([sys.executable, str(ANSWERING), "{task_file}"])
    repo = _repo(tmp_path, f"[agent]\ncommand = {command}\n")
    result = harness("run", "--runner", "harness,command", "--max-iterations", "1", cwd=repo)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("attempt 1 (harness): PASSED")
    assert lines[1].startswith("attempt 2 (command): MAX_ITERATIONS")
    summary = json.loads((repo / ".harness" / "attempts" / "calc" / "summary.json").read_text())
    records = {r["name"]: r for r in summary["tasks"]}
    assert [(r["runner"], r["status"]) for r in records.values()] == [
        ("harness", "passed"), ("command", "escalated"),
    ]  # fmt: skip
    ours, theirs = records["attempt-1"], records["attempt-2"]
    assert summary["runners"] == [
        {"runner": "harness", "attempts": 1, "resolved": 1,
         "tokens": ours["prompt_tokens"] + ours["completion_tokens"], "cost_usd": 0.0,
         "seconds": ours["seconds"], "cost_per_resolved": 0.0,
         "seconds_per_resolved": ours["seconds"], "mean_rounds": 1.0},
        {"runner": "command", "attempts": 1, "resolved": 0,
         "tokens": theirs["prompt_tokens"] + theirs["completion_tokens"], "cost_usd": 0.0,
         "seconds": theirs["seconds"], "cost_per_resolved": None, "seconds_per_resolved": None,
         "mean_rounds": 1.0},
    ]  # fmt: skip
    assert theirs["prompt_tokens"] > 0  # its one request went through the gateway
    at = lines.index("side by side:")
    table = lines[at + 1 : at + 4]
    assert lines[at + 4].startswith("report: harness report ")
    assert table[0].split()[:3] == ["runner", "resolved", "tokens"]
    assert table[1].split()[:2] == ["harness", "1/1"]
    assert table[2].split() == [
        "command", "0/1", str(summary["runners"][1]["tokens"]), "$0.0000",
        f"{theirs['seconds']:.1f}s", "-", "-", "1.00",
    ]  # fmt: skip
    report = harness_here("report", str(repo / ".harness" / "attempts" / "calc"), cwd=repo)
    assert "side by side:" in report.stdout
    too_few = harness_here("run", "--runner", "harness,command", "--attempts", "1", cwd=repo)
    assert too_few.returncode == 2
    assert "--runner: 2 runners named but --attempts is 1" in too_few.stderr


def test_a_batch_runs_each_task_once_per_runner_and_compares_them(tmp_path: Path) -> None:
    command = json.dumps([sys.executable, str(ANSWERING)])  # the task on stdin
    _repo(tmp_path, f"[agent]\ncommand = {command}\n")
    tasks = [{"name": "calc", "loop": "repo/loop.toml"}]
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    out = tmp_path / "out"
    result = harness(
        "batch", "tasks.jsonl", "--out", str(out), "--runner", "harness,command", "--quiet",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 3, result.stdout + result.stderr  # not every task passed
    summary = json.loads((out / "summary.json").read_text())
    assert [(t["name"], t["runner"], t["status"]) for t in summary["tasks"]] == [
        ("calc.harness", "harness", "passed"), ("calc.command", "command", "escalated"),
    ]  # fmt: skip
    assert [(r["runner"], r["resolved"], r["attempts"]) for r in summary["runners"]] == [
        ("harness", 1, 1), ("command", 0, 1),
    ]  # fmt: skip
    assert "side by side:" in result.stdout
    twice = harness_here("batch", "tasks.jsonl", "--runner", "codex,codex", cwd=tmp_path)
    assert twice.returncode == 2
    assert "--runner: codex named twice" in twice.stderr
