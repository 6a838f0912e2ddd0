"""Crash safety: `harness run` killed with SIGKILL at random moments, then resumed.

Every variant must end exactly as an uninterrupted run does: the same rounds with the same
outcomes, each completed round recorded once (in progress.md and on the run branch), and a
progress.md that parses after every kill. The harness's own agent runs in the sandbox; an
external agent (a program speaking to the gateway) runs with none, where only the harness's
watcher ends it when the harness is killed.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from harness.memory.progress import Progress
from tests.conftest import git, make_repo

ROOT = Path(__file__).resolve().parents[2]
CHAT_AGENT = ROOT / "tests" / "runners" / "chat_agent.py"
EXTERNAL = f"""\
[agent]
runner = "command"
command = ["sh", "-c", "sleep 0.3; exec \\"$@\\"", "sh", "{sys.executable}", "{CHAT_AGENT}",
           "{{task_file}}"]
[sandbox]
backend = "none"
"""
KILLS_PER_VARIANT = 17  # four variants: 68 kills in all


def _round(content: str, *, external: bool) -> list[object]:
    sleep = [] if external else [{"name": "run_shell", "arguments": {"command": "sleep 0.3"}}]
    write = {"name": "write_file", "arguments": {"path": "answer.txt", "content": content}}
    return [*sleep, write, "done"]


def _project(folder: Path, *, external: bool = False) -> Path:
    project = make_repo(folder / "project", {"answer.txt": "no\n"})
    answers = {"1": "maybe\n", "2": "perhaps\n", "3": "yes\n"}
    script = {"rounds": {n: _round(text, external=external) for n, text in answers.items()}}
    (folder / "script.json").write_text(json.dumps(script))
    (project / "loop.toml").write_text(
        textwrap.dedent("""\
        name = "answer"
        goal = "answer.txt must say yes"
        model = "scripted:../script.json"
        max_iterations = 5
        patience = 5
        [critic]
        enabled = false
        [[gates]]
        type = "command"
        name = "says yes"
        cmd = "sleep 0.2; grep -qx yes answer.txt"
        """)
        + (EXTERNAL if external else "")
    )
    (project / ".gitignore").write_text(".harness/\nprogress/\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "loop")
    return project


def _start(project: Path) -> subprocess.Popen[bytes]:
    with (project.parent / "output.txt").open("wb") as output:
        return subprocess.Popen(
            [sys.executable, "-m", "harness.cli.main", "run", "--quiet"],
            cwd=project,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _outcome(project: Path) -> tuple[list[tuple[int, str]], str, list[str]]:
    progress = Progress.load(project / "progress" / "answer.md")
    branch = (
        next(s for s in progress.extra if s.heading == "Run").body.splitlines()[0].split(": ")[1]
    )
    trailers = git(
        project, "log", "--format=%(trailers:key=Harness-Round,valueonly)", branch
    ).split()
    return [(a.round, a.outcome) for a in progress.attempts], progress.status.value, trailers


@pytest.fixture(scope="module")
def reference(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[list[tuple[int, str]], str, list[str]]:
    project = _project(tmp_path_factory.mktemp("reference"))
    assert _start(project).wait(timeout=120) == 0
    return _outcome(project)


def _chaos_until_done(project: Path, rng: random.Random, budget: int) -> int:
    """Start and SIGKILL the run (process group) until it finishes by itself; return the kills."""
    progress_file = project / "progress" / "answer.md"
    kills = 0
    while True:
        process = _start(project)
        if kills < budget:
            time.sleep(rng.uniform(0.1, 1.8))
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                kills += 1
                if progress_file.exists():
                    Progress.load(progress_file)  # always parses, never torn
                continue
        code = process.wait(timeout=120)
        assert code == 0, (project.parent / "output.txt").read_text()
        return kills


@pytest.mark.slow
@pytest.mark.parametrize(("seed", "external"), [(1, False), (2, False), (3, False), (4, True)])
def test_sigkill_at_random_moments_then_resume_matches_an_uninterrupted_run(
    tmp_path: Path,
    seed: int,
    external: bool,
    reference: tuple[list[tuple[int, str]], str, list[str]],
) -> None:
    rng = random.Random(seed)
    kills = 0
    scenario = 0
    while kills < KILLS_PER_VARIANT:
        scenario += 1
        project = _project(tmp_path / f"scenario-{scenario}", external=external)
        kills += _chaos_until_done(project, rng, KILLS_PER_VARIANT - kills)
        attempts, status, trailers = _outcome(project)
        assert status == reference[1] == "passed"
        assert attempts == reference[0]
        assert attempts == [(1, "failed: says yes"), (2, "failed: says yes"), (3, "passed")]
        assert sorted(trailers) == sorted(reference[2]) == ["1", "2", "3"]
    assert kills == KILLS_PER_VARIANT
