"""A run ends the same way from Python as from ``harness run``: the same loop (a real git
repository, a scripted model, a pytest gate) run once through ``OuterLoop(...).run()`` and once
through the command in a process of its own leaves the same lock, branches, worktrees, progress
file and escalation report behind."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness import Agent, OuterLoop, PytestGate, ScriptedModel, StopReason
from harness.core.errors import ConfigError
from harness.core.event_schema import EventBase, RunStart
from harness.memory.lock import LoopLock
from harness.memory.progress import Progress
from harness.memory.run_state import RunState
from harness.outer.options import LoopOptions
from tests.cli.test_cli import harness
from tests.conftest import git, make_repo

pytestmark = pytest.mark.slow

GOAL = "Make the tests pass."
CALC = "def double(x):\n    return x + 2\n"
TESTS = "from calc import double\n\n\ndef test_double():\n    assert double(3) == 6\n"
BLOCKED_TESTS = "import nosuchmodule_for_life_cycle\n\n\ndef test_it():\n    assert True\n"
FIX = {"path": "calc.py", "old": "x + 2", "new": "x * 2"}
LOOP_TOML = (
    f'name = "fix"\ngoal = "{GOAL}"\nmax_iterations = 2\n'
    '[[gates]]\ntype = "pytest"\nargs = "-q tests"\n[critic]\nenabled = false\n'
)
STALE = "# Escalation: fix\n\nAn earlier run gave up.\n"


class Events:
    def __init__(self) -> None:
        self.seen: list[EventBase] = []

    def emit(self, event: EventBase) -> None:
        self.seen.append(event)


def project(tmp_path: Path, name: str, tests: str) -> Path:
    files = {
        "calc.py": CALC,
        "tests/test_calc.py": tests,
        "loop.toml": LOOP_TOML,
        ".gitignore": ".harness/\nprogress/\n",
    }
    return make_repo(tmp_path / name, files)


def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.json"
    round_1 = [
        {"name": "edit_file", "arguments": FIX},
        {"name": "submit", "arguments": {"summary": "fixed"}},
    ]
    path.write_text(json.dumps({"rounds": {"1": round_1}}))
    return path


def by_python(repo: Path, model: Path, **options: object) -> OuterLoop:
    return OuterLoop(
        GOAL,
        Agent(ScriptedModel.from_file(model)),
        gates=[PytestGate("-q tests")],
        max_iterations=2,
        workspace=repo,
        progress=repo / "progress" / "fix.md",
        name="fix",
        **options,
    )


def by_command(repo: Path, model: Path, *more: str) -> str:
    result = harness("run", "--model", f"scripted:{model}", *more, cwd=repo)
    assert result.returncode in (0, 1, 2, 3), result.stderr
    return result.stderr


def left_behind(repo: Path) -> dict[str, object]:
    """What the run's end left: the lock (free, its holder's details cleared), the run's
    branches and worktrees, the progress file's status, round and branch, an escalation."""
    progress_file = repo / "progress" / "fix.md"
    progress = Progress.load(progress_file)
    branches = git(repo, "branch", "--list", "harness/*", "--format=%(refname:short)")
    lock = LoopLock(progress_file)
    with lock:  # free: taken at once
        pass
    return {
        "lock details": lock.path.read_text(),
        "branches": re.sub(r"\b[0-9a-f]{8}\b", "ID", branches).split(),
        "worktrees": len(git(repo, "worktree", "list").splitlines()),
        "status": progress.status.value,
        "round": progress.iteration,
        "recorded branch": RunState.read(progress).branch is not None,
        "escalation": (repo / "progress" / "fix.escalation.md").exists(),
    }


def test_a_run_that_did_no_work_leaves_nothing_from_python_as_from_the_command(
    tmp_path: Path,
) -> None:
    model = script(tmp_path)
    python_repo = project(tmp_path, "python", BLOCKED_TESTS)
    result = by_python(python_repo, model).run()
    assert result.stop_reason is StopReason.ERROR
    assert "cannot collect at the base commit" in result.message
    assert (result.branch, result.worktree) == (None, None)
    assert result.removed.startswith("removed its branch harness/fix.")

    command_repo = project(tmp_path, "command", BLOCKED_TESTS)
    err = by_command(command_repo, model)
    assert "note: no round did any work, so nothing is kept: removed its branch " in err

    expected = {
        "lock details": "",
        "branches": [],
        "worktrees": 1,
        "status": "not started",
        "round": 0,
        "recorded branch": False,
        "escalation": True,  # the report of the stop stays: it says why nothing ran
    }
    assert left_behind(python_repo) == expected
    assert left_behind(command_repo) == expected


def test_a_pass_drops_the_stale_report_and_a_restart_names_the_branch_it_leaves(
    tmp_path: Path,
) -> None:
    model = script(tmp_path)
    outcomes, notes = [], []
    for name in ("python", "command"):
        repo = project(tmp_path, name, TESTS)
        (repo / "progress").mkdir()
        (repo / "progress" / "fix.escalation.md").write_text(STALE)
        if name == "python":
            assert by_python(repo, model).run().passed
        else:
            by_command(repo, model)
        outcomes.append(left_behind(repo))
        (branch,) = git(repo, "branch", "--list", "harness/*", "--format=%(refname:short)").split()
        said = f"the earlier run's branch {branch} is left as it was; `harness clean` removes it"
        if name == "python":
            events = Events()
            assert by_python(repo, model, earlier="restart", events=events).run().passed
            (start,) = [e for e in events.seen if isinstance(e, RunStart)]
            notes.append([note for note in start.notes if "earlier run" in note])
        else:
            err = by_command(repo, model, "--restart")
            notes.append([line[6:] for line in err.splitlines() if "earlier run" in line])
        assert notes[-1] == [f"{said} (and its worktree, if it has one)"]
        assert (repo / "progress" / "fix.previous.md").is_file()
    expected = {
        "lock details": "",
        "branches": ["harness/fix.ID.ID"],
        "worktrees": 2,  # a pass parks its worktree for the next run; the branch stays
        "status": "passed",
        "round": 1,
        "recorded branch": True,
        "escalation": False,
    }
    assert outcomes == [expected, expected]


def test_what_a_run_does_with_an_earlier_run_is_one_of_four_named_choices(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        by_python(tmp_path, script(tmp_path), earlier="fresh")
    assert str(caught.value) == (
        "earlier: Input should be 'resume', 'restart', 'carry' or 'reopen', got 'fresh'"
    )
    assert by_python(tmp_path, script(tmp_path)).settings.earlier == "resume"


def test_the_former_spelling_options_loop_options_gives_the_same_run(tmp_path: Path) -> None:
    model = script(tmp_path)
    runs = []
    for name in ("keywords", "options"):
        repo = project(tmp_path, name, TESTS)
        gates = [PytestGate("-q tests")]
        if name == "keywords":
            loop = OuterLoop(GOAL, Agent(ScriptedModel.from_file(model)), gates=gates,
                             workspace=repo, progress=repo / "progress" / "fix.md",
                             name="fix", patience=2, run_id="0000abcd")  # fmt: skip
        else:
            with pytest.warns(
                DeprecationWarning, match="^options=LoopOptions.*give the options as keywords$"
            ):
                loop = OuterLoop(GOAL, Agent(ScriptedModel.from_file(model)), gates=gates,
                                 workspace=repo, progress=repo / "progress" / "fix.md",
                                 options=LoopOptions(name="fix", patience=2, run_id="0000abcd"))  # fmt: skip
        result = loop.run()
        settings = loop.settings.model_dump(
            include={"name", "patience", "run_id", "max_iterations"}
        )
        branch = re.sub(r"\.[0-9a-f]{8}\.", ".ID.", result.branch or "")  # the repository's id
        runs.append((result.stop_reason, result.iterations, branch, settings, left_behind(repo)))
    assert runs[0] == runs[1]
    assert runs[0][:4] == (
        StopReason.PASSED, 1, "harness/fix.ID.0000abcd",
        {"name": "fix", "patience": 2, "run_id": "0000abcd", "max_iterations": 10},
    )  # fmt: skip
