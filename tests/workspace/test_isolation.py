"""Outer loops on real repositories never touch the user's checkout, and leave a diff per round."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import pytest

from harness import Agent, OuterLoop, PredicateGate, PytestGate, ScriptedModel, StopReason, ToolCall
from tests.conftest import copy_repo, git, make_repo
from tests.outer.test_outer import BUGGY, RIGHT, TESTS, write


@pytest.fixture(scope="module")
def calc(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The calc repository most tests copy: one base commit, measured once per worker."""
    files = {"calc.py": BUGGY, "tests/test_calc.py": TESTS}
    return make_repo(tmp_path_factory.mktemp("calc") / "repo", files)


@pytest.fixture
def repo(calc: Path, tmp_path: Path, module_state_home: Path) -> Path:
    return copy_repo(calc, tmp_path / "repo")


def snapshot(repo: Path) -> dict[str, str]:
    """HEAD, the index bytes and every file's content hash in the working tree."""
    files = {
        str(p.relative_to(repo)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(repo.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(repo).parts
    }
    return {
        "HEAD": git(repo, "rev-parse", "HEAD"),
        "branch": git(repo, "symbolic-ref", "HEAD"),
        "index": hashlib.sha256((repo / ".git" / "index").read_bytes()).hexdigest(),
        "status": git(repo, "status", "--porcelain"),
        **files,
    }


def test_three_rounds_leave_the_user_checkout_byte_for_byte_unchanged(repo: Path) -> None:
    (repo / "notes.txt").write_text("my uncommitted work\n")
    before = snapshot(repo)
    model = ScriptedModel(
        [
            *write("def add(a, b):\n    return a * b\n"),
            "I changed nothing this time.",  # an empty round: no commit
            *write(RIGHT),
        ]
    )
    loop = OuterLoop(
        "make the tests pass", Agent(model), gates=[PytestGate("tests")], workspace=repo
    )
    result = loop.run()
    assert result.stop_reason is StopReason.PASSED
    assert result.iterations == 3
    assert snapshot(repo) == before
    subjects = git(repo, "log", "--format=%s", f"main..{result.branch}").splitlines()
    assert len(subjects) == 2  # rounds 1 and 3 changed files; round 2 left no empty commit
    assert "round 3" in subjects[0]
    assert "round 1" in subjects[1]
    assert result.worktree is not None
    assert not result.worktree.exists()  # a passed run's worktree is pruned, its branch kept


def test_rollback_failed_resets_the_worktree_to_the_base_after_a_failed_round(
    repo: Path,
) -> None:
    model = ScriptedModel(
        [
            *write("def add(a, b):\n    return 0\n"),
            ToolCall("read_file", {"path": "calc.py"}),  # round 2 looks first
            *write(RIGHT),
        ]
    )
    loop = OuterLoop(
        "make the tests pass",
        Agent(model),
        gates=[PytestGate("tests")],
        workspace=repo,
        rollback="failed",
    )
    result = loop.run()
    assert result.passed
    seen_in_round_2 = model.calls[3].messages[-1]["content"]
    assert "return a - b" in seen_in_round_2  # the base, not round 1's wrong fix
    assert "return 0" not in seen_in_round_2
    assert result.rounds[0].commit is not None  # the failed attempt is still recorded


def test_eight_parallel_runs_on_one_repository_keep_to_their_own_worktrees(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README": "shared\n"})
    before = snapshot(repo)
    results = {}

    def run(index: int) -> None:
        name = f"file{index}.txt"
        model = ScriptedModel(
            [ToolCall("write_file", {"path": name, "content": f"{index}\n"}), "ok"]
        )
        gate = PredicateGate(
            lambda ws, name=name: (
                sorted(p.name for p in ws.iterdir() if p.name != ".git") == sorted(["README", name])
            ),
            name="only my file",
        )
        results[index] = OuterLoop(
            f"write {name}",
            Agent(model),
            gates=[gate],
            workspace=repo,
            name=f"job{index}",
        ).run()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert sorted(results) == list(range(8))
    assert all(r.stop_reason is StopReason.PASSED for r in results.values())
    assert len({r.branch for r in results.values()}) == 8
    for index, result in results.items():
        files = git(repo, "ls-tree", "--name-only", result.branch).split()
        assert sorted(files) == sorted(["README", f"file{index}.txt"])
    assert snapshot(repo) == before


def test_merge_fast_forwards_the_users_branch_after_a_pass(repo: Path) -> None:
    loop = OuterLoop(
        "make the tests pass", Agent(ScriptedModel(write(RIGHT))), gates=[PytestGate("tests")],
        workspace=repo, merge=True, )  # fmt: skip
    result = loop.run()
    assert result.passed
    assert "merged" in result.message
    assert git(repo, "rev-parse", "main") == git(repo, "rev-parse", result.branch)
    assert (repo / "calc.py").read_text() == RIGHT


def test_a_refused_merge_leaves_the_pass_and_says_why(repo: Path) -> None:
    (repo / "calc.py").write_text(BUGGY + "# my own edit\n")  # a dirty checkout: never overwritten
    loop = OuterLoop(
        "make the tests pass", Agent(ScriptedModel(write(RIGHT))), gates=[PytestGate("tests")],
        workspace=repo, merge=True, )  # fmt: skip
    result = loop.run()
    assert result.passed
    assert "not merged" in result.message
    assert (repo / "calc.py").read_text() == BUGGY + "# my own edit\n"


def test_uncommitted_changes_left_behind_are_reported(repo: Path) -> None:
    (repo / "calc.py").write_text(BUGGY + "# work in progress\n")
    result = OuterLoop(
        "make the tests pass", Agent(ScriptedModel(write(RIGHT))), gates=[PytestGate("tests")],
        workspace=repo,
    ).run()  # fmt: skip
    assert result.passed
    assert result.warning is not None
    assert "calc.py" in result.warning


def test_the_default_isolation_works_in_place_outside_git_and_in_a_worktree_inside(
    tmp_path: Path,
) -> None:
    from harness import CommandGate, ConfigError

    plain = tmp_path / "plain"
    plain.mkdir()
    model = ScriptedModel([ToolCall("write_file", {"path": "out.txt", "content": "yes"}), "ok"])
    gate = CommandGate("grep -q yes out.txt")
    result = OuterLoop("say yes", Agent(model), gates=[gate], workspace=plain).run()
    assert result.passed
    assert result.branch is None
    assert (plain / "out.txt").read_text() == "yes"
    with pytest.raises(ConfigError, match="isolation='none'"):
        OuterLoop(
            "say yes", Agent(model), gates=[gate], workspace=plain, isolation="worktree"
        ).run()


@pytest.mark.parametrize("keep", [False, True])
def test_a_passed_runs_worktree_is_kept_only_when_asked(repo: Path, keep: bool) -> None:
    result = OuterLoop(
        "make the tests pass", Agent(ScriptedModel(write(RIGHT))), gates=[PytestGate("tests")],
        workspace=repo, keep_worktree=keep,
    ).run()  # fmt: skip
    assert result.passed
    assert result.worktree is not None
    assert result.worktree.exists() is keep
    if keep:  # the fix, checked out, to try by hand
        assert (result.worktree / "calc.py").read_text() == RIGHT
        assert str(result.worktree) in git(repo, "worktree", "list")
    else:
        assert str(result.worktree) not in git(repo, "worktree", "list")
    assert (repo / "calc.py").read_text() == BUGGY  # the user's checkout is untouched
