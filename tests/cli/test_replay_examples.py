"""Every example, run offline with its scripted model and then replayed with `harness replay`:
no divergence, and the replay's verdicts are the recording's. Then the example's loop.toml is
changed as a user would change it, once in a tool (a permission that now denies the first tool
the agent used) and once in a gate (a stricter check): each replay names the divergence at the
exact round, and for the tool the exact step, the recording says it must be."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.core.trajectory_schema import GateStep, RoundFinish, ToolStep, VerdictStep
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


STRICTER = {
    "bugfix": ("ruff", 'cmd = "ruff check ."', 'cmd = "ruff check --select ALL ."'),
    "content": ("length", "--max 350", "--max 100"),
    "research": ("citations", "--min-sources 4", "--min-sources 14"),  # 13 sources exist
    "web-research": ("covers neap tides", "grep -qi 'neap'", "grep -qi 'tsunami'"),
}
"""Per example: a gate, and a change to its command that makes it stricter than the recording."""


def _replay(folder: Path, cwd: Path, run: str, *args: str, code: int = 0) -> str:
    """What ``harness replay RUN ARGS`` prints; it must exit ``code`` (3: it diverged)."""
    replay = harness("replay", run, "--root", str(folder), *args, cwd=cwd, env=PYTHON_ENV)
    assert replay.returncode == code, replay.stdout + replay.stderr
    return replay.stdout


def _run_and_replay(folder: Path, cwd: Path) -> None:
    run = harness("run", str(folder), "--quiet", cwd=cwd, env=PYTHON_ENV)
    assert run.returncode == 0, run.stdout + run.stderr
    (recorded,) = (folder / ".harness" / "runs").iterdir()
    replayed = _replay(folder, cwd, recorded.name)
    assert "no divergence" in replayed
    match = re.search(r"recorded again as run (\w+)", replayed)
    assert match is not None, replayed
    before = _verdicts(recorded)
    assert before == _verdicts(folder / ".harness" / "runs" / match.group(1))
    assert [v for v in before if v[0] == "round"][-1][2] == "passed"

    records = Trajectory.load(recorded).records
    config = folder / "loop.toml"
    original = config.read_text(encoding="utf-8")
    first = next(r for r in records if isinstance(r, ToolStep))
    config.write_text(original + f'\n[permissions]\ndeny = ["{first.name}"]\n', encoding="utf-8")
    denied = _replay(folder, cwd, recorded.name, "--round", str(first.round), code=3)
    assert (
        f"first divergence at round {first.round}, step {first.step}: "
        f"the observation of {first.name} differs"
    ) in denied, denied

    gate, before_cmd, after_cmd = STRICTER[folder.name]
    assert original.count(before_cmd) == 1
    config.write_text(original.replace(before_cmd, after_cmd), encoding="utf-8")
    passed = [r.round for r in records if isinstance(r, GateStep) and r.name == gate and r.passed]
    stricter = _replay(folder, cwd, recorded.name, "--round", str(passed[0]), code=3)
    assert f"first divergence at round {passed[0]}: gate {gate} differs" in stricter, stricter
    assert re.search(r"recorded: passed\n\s+now:\s+failed", stricter), stricter


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
