"""The harness command's features as a person uses them: a real subprocess, real files, signals."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.memory.progress import Progress
from harness.memory.progress_terms import Status
from harness.memory.skill import Skill
from harness.spec import LoopSpec
from tests.cli.test_cli import ROOT, harness, write_loop
from tests.conftest import alive, verdict_entry

ANSWER_LOOP = """\
name = "answer"
goal = "out.txt says yes"
isolation = "none"
model = "scripted:author.json"
{extra}
[[gates]]
type = "command"
name = "says yes"
cmd = "grep -q yes out.txt"
"""


def say(text: str) -> dict[str, object]:
    return {"name": "write_file", "arguments": {"path": "out.txt", "content": text}}


def script(folder: Path, name: str, entries: object) -> Path:
    path = folder / name
    path.write_text(json.dumps(entries))
    return path


def verdict(score: float) -> dict[str, object]:
    return verdict_entry(score, [f"critic says {score}"])


def events(stdout: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


# --- the critic's model -----------------------------------------------------------------------


@pytest.fixture
def critic_loop(tmp_path: Path) -> Path:
    """A loop whose author script holds no verdict: only a separate critic can pass it."""
    script(tmp_path, "author.json", [say("yes"), "done"])
    script(tmp_path, "critic.json", [verdict(9)])
    write_loop(tmp_path, ANSWER_LOOP.format(extra="max_iterations = 1"))
    return tmp_path


def _critic_models(stdout: str) -> list[object]:
    calls = [e for e in events(stdout) if e["kind"] == "model_call"]
    return [e["model"] for e in calls if e["role"] == "critic"]


def test_critic_model_flag_routes_the_critic_to_its_own_script(critic_loop: Path) -> None:
    critic = f"scripted:{critic_loop / 'critic.json'}"
    result = harness("run", "--json", "--critic-model", critic, cwd=critic_loop)
    assert result.returncode == 0, result.stderr
    assert _critic_models(result.stdout) == ["scripted:critic.json"]
    assert "Critic: 9.0/10" in (critic_loop / "progress" / "answer.md").read_text()


def test_critic_model_environment_variable_routes_the_critic(critic_loop: Path) -> None:
    critic = f"scripted:{critic_loop / 'critic.json'}"
    result = harness("run", "--json", cwd=critic_loop, env={"HARNESS_CRITIC_MODEL": critic})
    assert result.returncode == 0, result.stderr
    assert _critic_models(result.stdout) == ["scripted:critic.json"]


def test_critic_model_flag_beats_the_environment(critic_loop: Path) -> None:
    script(critic_loop, "lenient.json", [verdict(10)])
    result = harness(
        "run", "--quiet", "--critic-model", f"scripted:{critic_loop / 'critic.json'}",
        cwd=critic_loop, env={"HARNESS_CRITIC_MODEL": f"scripted:{critic_loop / 'lenient.json'}"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Critic: 9.0/10" in (critic_loop / "progress" / "answer.md").read_text()


def test_without_a_critic_model_the_author_script_must_also_judge(critic_loop: Path) -> None:
    result = harness("run", "--quiet", cwd=critic_loop)
    assert result.returncode == 1  # the author's script has no reply left for the review
    assert "exhausted" in result.stdout


def test_a_scripted_critic_model_in_loop_toml_is_relative_to_the_file(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    script(project, "author.json", [say("yes"), "done"])
    script(project, "critic.json", [verdict(9)])
    write_loop(project, ANSWER_LOOP.format(extra='[critic]\nmodel = "scripted:critic.json"'))
    result = harness("run", "--quiet", "project", cwd=tmp_path)
    assert result.returncode == 0, result.stderr


# --- resume, init, status ---------------------------------------------------------------------


def test_resume_continues_a_loop_in_progress_at_its_next_round(tmp_path: Path) -> None:
    rounds = {"1": [say("no"), "done"], "2": [say("yes"), "done"]}
    script(tmp_path, "author.json", {"rounds": rounds})
    write_loop(tmp_path, ANSWER_LOOP.format(extra="[critic]\nenabled = false"))
    first = harness("run", "--quiet", "--max-iterations", "1", cwd=tmp_path)
    assert first.returncode == 3, first.stderr
    progress_path = tmp_path / "progress" / "answer.md"
    progress_path.write_text(  # as a run killed mid-way leaves it
        progress_path.read_text().replace("Status: escalated", "Status: in progress")
    )
    assert Progress.load(progress_path).status is Status.IN_PROGRESS

    second = harness("resume", "--quiet", "--max-iterations", "3", cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    final = Progress.load(progress_path)
    assert final.status is Status.PASSED
    assert [a.round for a in final.attempts] == [1, 2]
    assert (tmp_path / "out.txt").read_text() == "yes"


@pytest.mark.parametrize(
    ("args", "folder", "kind"),
    [
        (["init", "content"], ".", "content"),
        (["init", "research"], ".", "research"),
        (["init", "--dir", "sub"], "sub", "bugfix"),
        (["init", "research", "--dir", "deep/er"], "deep/er", "research"),
    ],
)
def test_init_scaffolds_a_loop_that_loads(
    tmp_path: Path, args: list[str], folder: str, kind: str
) -> None:
    result = harness(*args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    target = tmp_path / folder
    config = LoopSpec.from_toml(target)
    assert config.root == target.resolve()
    assert config.name == kind
    assert config.skill is not None
    assert Skill.load(config.root / config.skill).name == kind
    assert (target / "progress").is_dir()
    assert ".harness/" in (target / ".gitignore").read_text().splitlines()
    if folder != ".":
        assert not (tmp_path / "loop.toml").exists()


def _progress(path: Path, name: str, status: Status, *outcomes: str) -> None:
    progress = Progress(name=name, goal=f"goal of {name}", max_iterations=5)
    progress.add_item("first step")
    for outcome in outcomes:
        progress.record_attempt(outcome)
    progress.status = status
    progress.save(path)


@pytest.fixture
def progress_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "progress"
    folder.mkdir()
    _progress(folder / "alpha.md", "alpha", Status.PASSED, "failed: pytest", "passed")
    _progress(folder / "beta.md", "beta", Status.IN_PROGRESS, "failed: lint")
    (folder / "beta.escalation.md").write_text("# Escalation: MAX_ITERATIONS\n")
    return folder


@pytest.mark.parametrize("where", ["progress", "."])
def test_status_lists_each_loop_of_a_progress_folder(progress_folder: Path, where: str) -> None:
    result = harness("status", where, cwd=progress_folder.parent)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines == [
        "alpha: passed, round 2 of 5, 1 open item(s), last: passed",
        "beta: in progress, round 1 of 5, 1 open item(s), last: failed: lint",
    ]


def test_status_does_not_list_a_progress_file_set_aside_by_restart(
    progress_folder: Path,
) -> None:
    (progress_folder / "alpha.md").replace(progress_folder / "alpha.previous.md")
    _progress(progress_folder / "alpha.md", "alpha", Status.IN_PROGRESS)
    result = harness("status", "progress", cwd=progress_folder.parent)
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == ["alpha", "beta"]


def test_status_skips_a_progress_folders_readme(progress_folder: Path) -> None:
    (progress_folder / "README.md").write_text("# progress/\n\nWhere progress files live.\n")
    result = harness("status", cwd=progress_folder.parent)
    assert result.returncode == 0, result.stderr
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == ["alpha", "beta"]


def test_status_leaves_out_the_shipped_progress_sample_unless_named(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "progress", tmp_path / "progress")
    result = harness("status", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "no loops found under .\n"  # a sample to read, not a loop in progress
    named = harness("status", "progress/example.sample.md", cwd=tmp_path)
    assert named.stdout == (
        "fix-dates: in progress, round 2 of 10, 1 open item(s), last: failed: pytest\n"
    )


# --- escalation hook, python gates ------------------------------------------------------------


HOOK = "on_escalate = " + json.dumps(
    """sh -c 'echo "$0|$HARNESS_ESCALATION_REPORT|$(ls -A)" > "$HARNESS_WORKSPACE/hook.txt"'"""
)
"""A hook that records its first argument, the report path it finds in its environment and what
its working folder holds, in the report's folder."""


def test_a_shell_escalation_hook_gets_the_report_s_path_in_an_empty_folder(
    tmp_path: Path,
) -> None:
    script(tmp_path, "author.json", ["I could not do it."])
    extra = f"{HOOK}\nmax_iterations = 1\n[critic]\nenabled = false"
    write_loop(tmp_path, ANSWER_LOOP.format(extra=extra))
    result = harness("run", cwd=tmp_path)
    assert result.returncode == 3, result.stderr
    report = (tmp_path / "progress" / "answer.escalation.md").resolve()
    assert report.is_file()
    written = tmp_path / "hook.txt"  # the progress folder is read-only to hooks
    assert written.read_text().strip() == f"{report}|{report}|"  # run in a folder of its own
    assert f"escalation report: {report}" in result.stdout


CHECKS = """\
from pathlib import Path


def has_yes(workspace: Path) -> tuple[bool, str]:
    out = workspace / "out.txt"
    text = out.read_text() if out.exists() else ""
    return "yes" in text, f"out.txt holds {text!r}"
"""

PYTHON_GATE_LOOP = """\
name = "answer"
goal = "out.txt says yes"
isolation = "none"
workspace = "work"
model = "scripted:author.json"
max_iterations = 1
[critic]
enabled = false
[[gates]]
type = "python"
target = "{target}"
"""


@pytest.mark.parametrize(("answer", "code"), [("yes", 0), ("no", 3)])
def test_a_python_gate_beside_loop_toml_decides_the_round(
    tmp_path: Path, answer: str, code: int
) -> None:
    (tmp_path / "checks.py").write_text(CHECKS)  # beside loop.toml, out of the agent's reach
    (tmp_path / "work").mkdir()
    script(tmp_path, "author.json", [say(answer), "done"])
    write_loop(tmp_path, PYTHON_GATE_LOOP.format(target="checks:has_yes"))
    result = harness("run", "--quiet", cwd=tmp_path)
    assert result.returncode == code, result.stderr
    text = (tmp_path / "progress" / "answer.md").read_text()
    assert ("has_yes — passed" if code == 0 else "has_yes — failed") in text


def test_a_python_gate_that_cannot_be_loaded_exits_2_naming_it(tmp_path: Path) -> None:
    (tmp_path / "checks.py").write_text(CHECKS)
    (tmp_path / "work").mkdir()
    script(tmp_path, "author.json", [say("yes"), "done"])
    write_loop(tmp_path, PYTHON_GATE_LOOP.format(target="checks:has_no"))
    result = harness("run", "--quiet", cwd=tmp_path)
    assert result.returncode == 2
    assert "checks:has_no" in result.stderr


# --- Ctrl-C and bad flags ---------------------------------------------------------------------


def _interrupted_run(tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], int]:
    """A run whose first tool call sleeps; SIGINT once it started. Returns the sleeper's pid."""
    command = "echo $$ > sleeper.pid && exec sleep 5"
    shell = {"name": "run_shell", "arguments": {"command": command}}
    script(tmp_path, "author.json", [shell, "done"])
    # The sleeper's pid is read from the host: no PID namespace (the sandbox's own test is in
    # tests/sandbox/test_survivors.py).
    extra = '[critic]\nenabled = false\n[sandbox]\nbackend = "none"'
    write_loop(tmp_path, ANSWER_LOOP.format(extra=extra))
    env = dict(os.environ)
    env.pop("HARNESS_MODEL", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "harness.cli.main", "run", "--quiet"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    pid_file = tmp_path / "sleeper.pid"
    deadline = time.monotonic() + 30
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the tool call never started"
        time.sleep(0.05)
    time.sleep(0.3)  # the harness is now waiting on the command
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=30)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr), int(
        pid_file.read_text()
    )


def test_ctrl_c_during_a_run_escalates_as_cancelled_with_exit_3(tmp_path: Path) -> None:
    result, sleeper = _interrupted_run(tmp_path)
    if alive(sleeper):  # see the next test; do not leave it behind
        os.kill(sleeper, signal.SIGKILL)
    assert result.returncode == 3, result.stderr
    report = tmp_path / "progress" / "answer.escalation.md"
    assert "CANCELLED" in report.read_text()
    assert result.stdout.splitlines() == [
        "CANCELLED: cancelled during round 1",
        "note: commands are not sandboxed: they run as the harness's user, with its files in reach "
        "(backend 'none')",
    ]
    assert Progress.load(tmp_path / "progress" / "answer.md").status is Status.ESCALATED


def test_ctrl_c_does_not_leave_the_running_command_behind(tmp_path: Path) -> None:
    result, sleeper = _interrupted_run(tmp_path)
    left = alive(sleeper)
    if left:
        os.kill(sleeper, signal.SIGKILL)
    assert result.returncode == 3
    assert not left


def test_max_iterations_zero_is_bad_usage(tmp_path: Path) -> None:
    write_loop(tmp_path, ANSWER_LOOP.format(extra=""))
    result = harness("run", "--max-iterations", "0", cwd=tmp_path)
    assert result.returncode == 2
    assert "--max-iterations" in result.stderr
    assert "1 to 100" in result.stderr
    assert not (tmp_path / "progress").exists()
