"""What each round leaves on disk and on the run's branch: progress.md, the spend record, and the
commit of a round cut short."""

from __future__ import annotations

from pathlib import Path

from harness import (
    Agent,
    Budget,
    CommandGate,
    OuterLoop,
    Progress,
    ScriptedModel,
    StopReason,
    ToolCall,
)
from harness.memory.spend import read_spent, spend_path
from harness.outer.options import LoopOptions
from tests.conftest import git, make_repo

GOAL = "answer.txt must say yes"
SAYS_YES = CommandGate("grep -qx yes answer.txt", name="says yes")


def _write(content: str) -> ToolCall:
    return ToolCall("write_file", {"path": "answer.txt", "content": content})


def _loop(
    repo: Path, model: ScriptedModel, progress: Path | None = None, **kwargs: object
) -> OuterLoop:
    return OuterLoop(
        GOAL, Agent(model, max_tokens=200), gates=[kwargs.pop("gate", SAYS_YES)],  # type: ignore[list-item]
        workspace=repo, progress=progress, max_iterations=1,
        options=LoopOptions(patience=10), **kwargs,  # type: ignore[arg-type]
    )  # fmt: skip


def test_the_agents_resume_point_and_checklist_are_kept_when_its_round_completes(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", {"answer.txt": "no\n"})
    path = tmp_path / "progress" / "answer.md"
    update = ToolCall("update_progress", {"resume_point": "from X", "add": ["check spelling"]})
    model = ScriptedModel([update, _write("maybe\n"), "done"])

    result = _loop(repo, model, path).run()

    assert result.stop_reason is StopReason.MAX_ITERATIONS  # the round completed, and failed
    saved = Progress.load(path)
    assert saved.resume_point == "from X"
    assert [item.text for item in saved.checklist] == ["check spelling"]
    assert "Resume point: from X" in path.read_text()


def test_the_agents_summary_is_recorded_cut_to_exactly_300_characters(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"answer.txt": "no\n"})
    path = tmp_path / "progress" / "answer.md"
    summary = "a" * 299 + "b" + "c" * 100  # 400 characters; the 300th is the only b
    model = ScriptedModel([_write("yes\n"), f"  {summary}\n"])

    result = _loop(repo, model, path).run()

    assert result.passed
    recorded = Progress.load(path).attempts[0].summary
    assert recorded == "a" * 299 + "b"
    assert f"- Summary: {'a' * 299}b\n" in path.read_text()
    assert "c" not in recorded


def test_a_round_cut_short_by_the_budget_is_committed_on_the_runs_branch(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"answer.txt": "no\n"})
    busy = [ToolCall("run_shell", {"command": "echo trying"}) for _ in range(30)]
    model = ScriptedModel([_write("half done\n"), *busy])

    result = _loop(repo, model, budget=Budget(tokens=3_000)).run()

    assert result.stop_reason is StopReason.BUDGET_TOKENS
    assert result.branch is not None
    assert result.branch != "main"
    subjects = git(repo, "log", "--format=%s", result.branch).splitlines()
    assert subjects == ["harness: round 1 (interrupted, not verified)", "initial"]
    assert git(repo, "show", f"{result.branch}:answer.txt") == "half done"
    assert git(repo, "show", "main:answer.txt") == "no"  # the work stays on its branch


def test_a_round_cut_short_without_a_branch_leaves_its_work_uncommitted(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"answer.txt": "no\n"})
    busy = [ToolCall("run_shell", {"command": "echo trying"}) for _ in range(30)]
    model = ScriptedModel([_write("half done\n"), *busy])

    result = _loop(repo, model, budget=Budget(tokens=3_000), isolation="none").run()

    assert result.stop_reason is StopReason.BUDGET_TOKENS
    assert result.branch is None
    assert git(repo, "log", "--format=%s") == "initial"
    assert (repo / "answer.txt").read_text() == "half done\n"


def test_the_spend_record_counts_the_time_the_gates_took_after_the_last_model_call(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", {"answer.txt": "no\n"})
    path = tmp_path / "progress" / "answer.md"
    slow = CommandGate("sleep 2; false", name="slow")

    result = _loop(repo, ScriptedModel(["nothing to do"]), path, gate=slow).run()

    assert result.stop_reason is StopReason.MAX_ITERATIONS
    spent = read_spent(spend_path(path))
    assert spent.calls == 1
    assert spent.seconds >= 2  # a resumed run's time budget starts from here
