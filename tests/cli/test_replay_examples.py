"""Every example, run offline with its scripted model and then replayed with `harness replay`:
no divergence, and the replay's verdicts are the recording's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.core.trajectory_schema import GateStep, RoundFinish, VerdictStep
from harness.observe.trajectory import Trajectory
from tests.cli.test_cli import harness
from tests.cli.test_example_web import example  # noqa: F401 - the served web-research copy
from tests.cli.test_examples import PYTHON_ENV, copy_example
from tests.conftest import git

pytestmark = pytest.mark.slow  # each example runs twice, its real gates included


def _verdicts(run: Path) -> list[tuple[str, int | None, object]]:
    """Every gate result, critic verdict and round outcome of a recorded run, in order."""
    found: list[tuple[str, int | None, object]] = []
    for record in Trajectory.load(run).records:
        if isinstance(record, GateStep):
            found.append(("gate", record.round, (record.name, record.passed, record.failures)))
        elif isinstance(record, VerdictStep):
            found.append(("verdict", record.round, (record.score, record.passed)))
        elif isinstance(record, RoundFinish):
            found.append(("round", record.round, record.outcome))
    return found


def _run_and_replay(folder: Path, cwd: Path) -> None:
    run = harness("run", str(folder), "--quiet", cwd=cwd, env=PYTHON_ENV)
    assert run.returncode == 0, run.stdout + run.stderr
    (recorded,) = (folder / ".harness" / "runs").iterdir()
    replay = harness("replay", recorded.name, "--root", str(folder), cwd=cwd, env=PYTHON_ENV)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "no divergence" in replay.stdout
    match = re.search(r"recorded again as run (\w+)", replay.stdout)
    assert match is not None, replay.stdout
    replayed = folder / ".harness" / "runs" / match.group(1)
    before, after = _verdicts(recorded), _verdicts(replayed)
    assert before == after
    assert [v for v in before if v[0] == "round"][-1][2] == "passed"


@pytest.mark.parametrize("name", ["bugfix", "content", "research"])
def test_an_example_replayed_gives_the_same_verdicts(name: str, tmp_path: Path) -> None:
    folder = copy_example(name, tmp_path)
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "add", "-A")
    git(tmp_path, "-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-qm", "x")
    _run_and_replay(folder, tmp_path)


def test_the_web_example_replayed_gives_the_same_verdicts(example: Path) -> None:  # noqa: F811
    root = example.parent.parent
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-qm", "x")
    _run_and_replay(example, root)
