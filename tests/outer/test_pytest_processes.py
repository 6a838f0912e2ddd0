"""pytest processes a run starts, counted for real: a conftest of the project under test writes one
line per pytest session into a log outside the repository (the gates run unsandboxed to reach
it), ``base`` for a session on the base commit's code, ``round`` for one on a round's.

A round costs one pytest process; the base is measured once per base commit and kept, across
runs, best-of-N attempts and a batch's tasks on one repository running at once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import (
    Agent,
    Batch,
    BatchTask,
    OuterLoop,
    PytestGate,
    Sandbox,
    ScriptedModel,
    StopReason,
    ToolCall,
)
from harness.scale.best_of import BestOf
from harness.scale.task_run import TaskRun
from tests.conftest import git, make_repo

BUG = "def add(a, b):\n    return a - b\n"
WRONG = ToolCall("write_file", {"path": "calc.py", "content": "def add(a, b):\n    return a * b\n"})
RIGHT = ToolCall("write_file", {"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"})


def counting_conftest(log: Path) -> str:
    return (
        "from pathlib import Path\n\n"
        "def pytest_sessionstart(session):\n"
        "    code = (Path(__file__).parent / 'calc.py').read_text()\n"
        f"    with open({str(log)!r}, 'a') as log:\n"
        "        log.write(('base' if 'a - b' in code else 'round') + '\\n')\n"
    )


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "sessions.log"


@pytest.fixture
def repo(tmp_path: Path, log: Path) -> Path:
    return make_repo(
        tmp_path / "repo",
        {
            "calc.py": BUG,
            "tests/test_calc.py": (
                "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n\n"
                "def test_zero():\n    assert add(0, 0) == 0\n"
            ),
            "conftest.py": counting_conftest(log),
        },
    )


def sessions(log: Path) -> list[str]:
    """The sessions written since the last look, and the log emptied."""
    lines = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return lines


def loop(
    repo: Path, *replies: object, progress: Path | None = None, **settings: object
) -> OuterLoop:
    return OuterLoop(
        "make the tests pass",
        Agent(ScriptedModel(list(replies))),
        gates=[PytestGate("tests", sandbox=Sandbox("none"))],
        workspace=repo,
        max_iterations=3,
        progress=progress,
        **settings,
    )


def test_a_round_is_one_pytest_process_and_the_base_is_measured_once_per_base_commit(
    repo: Path, log: Path
) -> None:
    first = loop(repo, WRONG, "tried", RIGHT, "done").run()
    assert (first.stop_reason, first.iterations) == (StopReason.PASSED, 2)
    assert sessions(log) == ["base", "round", "round"]  # no collection of its own after a pass

    second = loop(repo, RIGHT, "done").run()  # a new run from the same base commit
    assert (second.stop_reason, second.iterations) == (StopReason.PASSED, 1)
    assert sessions(log) == ["round"]  # the base's results were kept

    git(repo, "commit", "--allow-empty", "-qm", "a new base")
    assert loop(repo, RIGHT, "done").run().passed
    assert sessions(log) == ["base", "round"]  # a new base commit is measured once more


def test_attempts_at_once_measure_their_base_once(repo: Path, log: Path) -> None:
    result = BestOf(lambda n: loop(repo, RIGHT, "done"), attempts=3, workspace=repo).run()

    assert [a.passed for a in result.attempts] == [True, True, True]
    assert sorted(sessions(log)) == ["base", "round", "round", "round"]


def test_a_batchs_tasks_on_one_repository_measure_their_base_once(
    repo: Path, log: Path, tmp_path: Path
) -> None:
    def loop_for(task: BatchTask, run: TaskRun) -> OuterLoop:
        return loop(repo, RIGHT, "done", progress=run.progress, run_id=run.run_id, name=task.name)

    tasks = [{"name": f"t{n}"} for n in range(3)]
    summary = Batch(tasks, loop_for, workers=3, out=tmp_path / "out").run()

    assert summary.counts == {"passed": 3}
    assert sorted(sessions(log)) == ["base", "round", "round", "round"]
