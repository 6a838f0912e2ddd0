"""A pass read back from progress.md: each way the claim is refused, named, and when it holds."""

from __future__ import annotations

import sys
from pathlib import Path

from harness import Agent, CommandGate, Critic, OuterLoop, ScriptedModel
from harness.memory.progress import Progress
from harness.memory.progress_items import Attempt
from harness.memory.progress_terms import Status
from harness.memory.run_state import RunState
from harness.outer.claims import unconfirmed_pass
from harness.verify.gates import Gate
from harness.verify.pytest_gate import PytestGate
from tests.conftest import git, make_repo

BROKEN = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
CHECK = [sys.executable, "-c", "from calc import add; assert add(2, 3) == 5"]


def claim(folder: Path, attempts: list[Attempt], state: RunState | None = None) -> Progress:
    progress = Progress.load_or_create(folder / "progress.md", name="loop", goal="fix add")
    progress.status = Status.PASSED
    progress.attempts = attempts
    if state is not None:
        state.write(progress)
    progress.save()
    return Progress.load(folder / "progress.md")


def judged(
    workspace: Path, progress: Progress, *gates: Gate, critic: Critic | None = None
) -> str | None:
    loop = OuterLoop(
        "fix add", Agent(ScriptedModel([])), gates=list(gates), critic=critic,
        workspace=workspace, isolation="none",
    )  # fmt: skip
    return unconfirmed_pass(loop.settings, progress)


def passed(round_number: int = 1, commit: str = "") -> Attempt:
    return Attempt(round=round_number, outcome="passed", commit=commit)


def test_a_claim_without_a_passing_last_round_is_refused_before_any_gate(tmp_path: Path) -> None:
    (tmp_path / "ran").mkdir()
    gate = CommandGate("touch ran/gate")
    assert judged(tmp_path, claim(tmp_path, []), gate) == (
        "progress.md says passed, but it records no round"
    )
    failed_last = [passed(1), Attempt(round=2, outcome="failed: pytest")]
    assert judged(tmp_path, claim(tmp_path, failed_last), gate) == (
        "progress.md says passed, but its last round ended 'failed: pytest'"
    )
    assert not (tmp_path / "ran" / "gate").exists()


def test_a_loop_without_gates_goes_by_its_recorded_verdict(tmp_path: Path) -> None:
    critic = Critic(ScriptedModel([]))
    assert judged(tmp_path, claim(tmp_path, [passed()]), critic=critic) is None
    repo = make_repo(tmp_path / "repo", {"notes.md": "draft\n"})
    head = git(repo, "rev-parse", "HEAD")
    unchecked = claim(tmp_path, [passed(commit=head)], RunState("main", base="e" * 40, head=head))
    assert judged(repo, unchecked, critic=critic) is None  # no gate to run at any commit


def test_outside_git_the_gates_judge_the_folder_itself(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text(BROKEN)
    progress = claim(tmp_path, [passed()])
    gate = CommandGate(CHECK, name="add")
    assert judged(tmp_path, progress, gate) == (
        "progress.md says passed, but gate add fails on the workspace: `add` failed with exit "
        "code 1: AssertionError"
    )
    (tmp_path / "calc.py").write_text(FIXED)
    assert judged(tmp_path, progress, gate) is None


def test_in_git_without_a_recorded_base_the_folder_is_judged(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": FIXED})
    head = git(repo, "rev-parse", "HEAD")
    progress = claim(tmp_path, [passed(commit=head)], RunState(branch="main", head=head))
    (repo / "calc.py").write_text(BROKEN)  # uncommitted: only the folder shows it
    assert judged(repo, progress, CommandGate(CHECK, name="add")) == (
        "progress.md says passed, but gate add fails on the workspace: `add` failed with exit "
        "code 1: AssertionError"
    )


def test_a_base_that_is_not_a_commit_here_is_named(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": FIXED})
    head = git(repo, "rev-parse", "HEAD")
    state = RunState(branch="main", base="e" * 40, head=head)
    progress = claim(tmp_path, [passed(commit=head)], state)
    assert judged(repo, progress, CommandGate("true")) == (
        f"progress.md says passed at {head[:12]}, but eeeeeeeeeeee is not a commit here"
    )


def test_a_commit_that_does_not_descend_from_the_base_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": BROKEN})
    first = git(repo, "rev-parse", "HEAD")
    (repo / "calc.py").write_text(FIXED)
    git(repo, "commit", "-qam", "fix")
    second = git(repo, "rev-parse", "HEAD")
    state = RunState(branch="main", base=second, head=first)
    progress = claim(tmp_path, [passed(commit=first)], state)
    assert judged(repo, progress, CommandGate("true")) == (
        f"progress.md says passed at {first[:12]}, which does not descend from the base"
    )


def test_the_recorded_head_stands_in_for_a_round_without_a_commit(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": BROKEN})
    base = git(repo, "rev-parse", "HEAD")
    (repo / "calc.py").write_text(FIXED)
    git(repo, "commit", "-qam", "fix")
    fixed = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", base)  # the folder is broken; the recorded head is not
    gate = CommandGate(CHECK, name="add")
    progress = claim(tmp_path, [passed()], RunState(branch="main", base=base, head=fixed))
    assert judged(repo, progress, gate) is None
    at_base = claim(tmp_path, [passed()], RunState(branch="main", base=base, head=base))
    assert judged(repo, at_base, gate) == (
        f"progress.md says passed, but gate add fails on its commit {base[:12]}: `add` failed "
        "with exit code 1: AssertionError"
    )


def test_the_first_failing_gate_is_named(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text(BROKEN)
    progress = claim(tmp_path, [passed()])
    gates = (CommandGate("true", name="ok"), CommandGate("exit 4", name="four"),
             CommandGate("exit 5", name="five"))  # fmt: skip
    assert judged(tmp_path, progress, *gates) == (
        "progress.md says passed, but gate four fails on the workspace: `four` failed with exit "
        "code 4"
    )


def test_a_test_that_ran_at_the_base_and_is_skipped_at_the_claimed_commit_refuses_it(
    tmp_path: Path,
) -> None:
    tests = (
        "import pytest\nimport calc\n\n\ndef test_add():\n    assert calc.add(2, 3) == 5\n\n\n"
        "def test_feature():\n    if not hasattr(calc, 'feature'):\n        pytest.skip('gone')\n"
        "    assert calc.feature() == 1\n"
    )
    repo = make_repo(tmp_path / "repo", {"calc.py": FIXED + "def feature():\n    return 1\n",
                                         "test_calc.py": tests})  # fmt: skip
    base = git(repo, "rev-parse", "HEAD")
    (repo / "calc.py").write_text(FIXED)  # the feature removed: its test now skips itself
    git(repo, "commit", "-qam", "drop the feature")
    head = git(repo, "rev-parse", "HEAD")
    progress = claim(tmp_path, [passed(commit=head)], RunState(branch="main", base=base, head=head))
    message = judged(repo, progress, PytestGate())
    assert message == (
        f"progress.md says passed, but gate pytest fails on its commit {head[:12]}: pytest: "
        "1 passed, 1 skipped of 2 tests; 1 test that ran at the base commit did not pass now "
        "(skipped, deselected or gone): test_calc.py::test_feature"
    )
