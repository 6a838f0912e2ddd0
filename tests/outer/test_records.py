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
from harness.memory.progress_terms import Status
from harness.memory.spend import read_spent, spend_path
from harness.outer.decision import RoundReport
from tests.conftest import git, make_repo

GOAL = "answer.txt must say yes"
SAYS_YES = CommandGate("grep -qx yes answer.txt", name="says yes")


def _write(content: str) -> ToolCall:
    return ToolCall("write_file", {"path": "answer.txt", "content": content})


def _loop(
    repo: Path,
    model: ScriptedModel,
    progress: Path | None = None,
    **kwargs: object,
) -> OuterLoop:
    return OuterLoop(
        GOAL, Agent(model, max_tokens=200), gates=kwargs.pop("gates", [kwargs.pop("gate", SAYS_YES)]),  # type: ignore[arg-type]
        workspace=repo, progress=progress, max_iterations=kwargs.pop("max_iterations", 1),  # type: ignore[arg-type]
        **{"patience": 10, **kwargs},
    )  # fmt: skip


def _subjects(repo: Path, branch: str) -> list[str]:
    return git(repo, "log", "--format=%s", branch).splitlines()


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
    at_round_end: list[float] = []
    result = _loop(
        repo, ScriptedModel(["nothing to do"]), path, gate=slow,
        on_round=lambda report: at_round_end.append(read_spent(spend_path(path)).seconds),
    ).run()  # fmt: skip

    assert result.stop_reason is StopReason.MAX_ITERATIONS
    assert at_round_end[0] >= 2  # saved with the round, before the next is decided
    spent = read_spent(spend_path(path))
    assert spent.calls == 1
    assert spent.seconds >= 2  # a resumed run's time budget starts from here


def test_the_spend_record_counts_a_round_cut_short_after_its_last_model_call(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", {"answer.txt": "no\n"})
    path = tmp_path / "progress" / "answer.md"
    slow = ToolCall("run_shell", {"command": "sleep 5"})  # stopped when the second is up
    model = ScriptedModel([slow, *[_write("yes\n")] * 5])

    result = _loop(repo, model, path, budget=Budget(seconds=1)).run()

    assert result.stop_reason is StopReason.TIMEOUT
    assert result.cut_short == 1
    spent = read_spent(spend_path(path))
    assert spent.calls == 1  # the round's only model call came before its slow command
    assert spent.seconds >= 1  # saved when the run finished, with the command's time


def test_each_round_is_on_disk_when_the_next_is_decided_and_a_pass_with_its_round(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", {"answer.txt": "no\n"})
    path = tmp_path / "progress" / "answer.md"
    seen: list[tuple[int, Status, list[int]]] = []

    def on_round(report: RoundReport) -> None:
        saved = Progress.load(path)
        seen.append((report.round, saved.status, [a.round for a in saved.attempts]))

    model = ScriptedModel([_write("maybe\n"), "done", _write("yes\n"), "done"])

    result = _loop(repo, model, path, on_round=on_round, max_iterations=2).run()

    assert result.passed
    assert result.escalation is None
    assert seen == [(1, Status.IN_PROGRESS, [1]), (2, Status.PASSED, [1, 2])]
    attempt = Progress.load(path).attempts[1]
    assert attempt.outcome == "passed"
    assert attempt.commit
    assert git(repo, "rev-parse", result.branch or "").startswith(attempt.commit)
    assert result.worktree is not None
    assert not result.worktree.exists()  # the worktree is removed, the branch stays
    assert _subjects(repo, result.branch or "")[-1] == "initial"


def test_a_failed_round_is_rolled_back_when_asked_and_kept_otherwise(tmp_path: Path) -> None:
    branches = {}
    for rollback in ("failed", "keep"):
        repo = make_repo(tmp_path / rollback, {"answer.txt": "no\n"})
        junk = ToolCall("write_file", {"path": "junk.txt", "content": "junk\n"})
        model = ScriptedModel([junk, _write("maybe\n"), "done", _write("yes\n"), "done"])

        result = _loop(repo, model, rollback=rollback, max_iterations=2).run()

        assert result.passed
        assert result.branch is not None
        branches[rollback] = git(repo, "ls-tree", "--name-only", result.branch).splitlines()
        assert git(repo, "show", f"{result.branch}:answer.txt") == "yes"
    assert branches == {"failed": ["answer.txt"], "keep": ["answer.txt", "junk.txt"]}


def test_a_resumed_run_continues_from_the_last_rounds_commit(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"answer.txt": "no\n"})
    path = tmp_path / "progress" / "answer.md"
    junk = ToolCall("write_file", {"path": "junk.txt", "content": "junk\n"})
    first = _loop(repo, ScriptedModel([junk, _write("maybe\n"), "done"]), path).run()
    assert first.stop_reason is StopReason.MAX_ITERATIONS
    assert first.escalation is not None
    assert Progress.load(path).status is Status.ESCALATED

    model = ScriptedModel.per_round({2: [_write("still no\n"), "done"]})
    second = _loop(repo, model, path, max_iterations=2).run()

    assert second.stop_reason is StopReason.MAX_ITERATIONS
    assert second.branch == first.branch
    assert git(repo, "show", f"{second.branch}:junk.txt") == "junk"  # round 1 was not redone
    assert len(_subjects(repo, second.branch or "")) == 3  # round 2, round 1, initial
    assert second.escalation is not None
    report = second.escalation.read_text()
    assert "### Round 1: failed: says yes (an earlier session)" in report
    assert "### Round 2: failed: says yes (an earlier session)" not in report
    assert "**Rounds:** 2" in report


def test_a_pass_is_merged_into_the_users_branch_when_asked(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"answer.txt": "no\n"})

    result = _loop(repo, ScriptedModel([_write("yes\n"), "done"]), merge=True).run()

    assert result.passed
    assert result.message.endswith("; merged into your branch (main)")
    assert (result.origin, result.merged) == ("main", True)
    assert git(repo, "show", "main:answer.txt") == "yes"


def test_a_pass_that_cannot_be_merged_stays_on_its_branch_and_says_so(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"answer.txt": "no\n"})

    def move_main(report: RoundReport) -> None:  # the user's branch moves on meanwhile
        git(repo, "commit", "-q", "--allow-empty", "-m", "moved")

    result = _loop(
        repo, ScriptedModel([_write("yes\n"), "done"]), merge=True, on_round=move_main
    ).run()

    assert result.passed
    assert "; not merged, the work stays on its branch: " in result.message
    assert "merged into your branch" not in result.message
    assert (result.origin, result.merged) == ("main", False)
    assert git(repo, "show", "main:answer.txt") == "no"
    assert git(repo, "show", f"{result.branch}:answer.txt") == "yes"


def test_a_run_that_escalates_reports_its_round_stop_escalation_and_end_in_order(
    tmp_path: Path,
) -> None:
    from tests.conftest import RecordingSink

    repo = make_repo(tmp_path / "repo", {"answer.txt": "no\n"})
    sink = RecordingSink()
    path = tmp_path / "progress" / "answer.md"
    result = _loop(repo, ScriptedModel([_write("maybe\n"), "done"]), path,
                   patience=10, events=sink, run_id="r0000001").run()  # fmt: skip
    assert result.stop_reason is StopReason.MAX_ITERATIONS
    closing = [(kind, data) for kind, data in sink.events if kind in RECORDS]
    assert [kind for kind, _ in closing] == ["round_end", "escalation", "stop", "run_end"]
    (_, round_end), (_, escalation), (_, stop), (_, run_end) = closing
    assert (round_end["round"], round_end["passed"], round_end["outcome"]) == (
        1, False, "failed: says yes",
    )  # fmt: skip
    assert stop == {"reason": "MAX_ITERATIONS", "message": result.message}
    assert escalation == {"reason": "MAX_ITERATIONS", "report_path": str(result.escalation)}
    assert (run_end["run_id"], run_end["stop_reason"], run_end["passed"]) == (
        "r0000001", "MAX_ITERATIONS", False,
    )  # fmt: skip
    assert run_end["iterations"] == 1
    assert (result.merged, result.best_round) == (False, 1)
    assert result.best == "round 1 (0/1 gates passed)"


def test_a_run_that_passes_reports_no_escalation(tmp_path: Path) -> None:
    from tests.conftest import RecordingSink

    repo = make_repo(tmp_path / "repo", {"answer.txt": "no\n"})
    sink = RecordingSink()
    result = _loop(repo, ScriptedModel([_write("yes\n"), "done"]),
                   patience=10, events=sink).run()  # fmt: skip
    assert result.passed
    closing = [(kind, data) for kind, data in sink.events if kind in RECORDS]
    assert [kind for kind, _ in closing] == ["round_end", "stop", "run_end"]
    assert closing[0][1]["passed"] is True
    assert closing[1][1]["reason"] == "PASSED"
    assert closing[2][1]["passed"] is True
    assert (result.merged, result.best_round) == (False, 1)  # not asked to merge
    assert result.best == "round 1 (passed, 1/1 gates passed)"


def test_a_pass_whose_worktree_cannot_be_removed_says_so_and_keeps_it(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"answer.txt": "no\n"})

    def lock(report: RoundReport) -> None:  # someone locks the run's worktree meanwhile
        listed = git(repo, "worktree", "list", "--porcelain").splitlines()
        (worktree,) = [line[9:] for line in listed[1:] if line.startswith("worktree ")]
        git(repo, "worktree", "lock", "--reason", "in use", worktree)

    result = _loop(repo, ScriptedModel([_write("yes\n"), "done"]), park=False, on_round=lock).run()

    assert result.passed
    assert result.worktree is not None
    said = result.message.split("; the worktree was left in place: ")[1]  # said once, at the end
    assert said.startswith(f"finish: could not remove the worktree {result.worktree} (")
    assert "locked working tree" in said  # git's own reason
    assert said.endswith(f"`git worktree remove --force {result.worktree}` once nothing uses it.")
    assert (result.worktree / "answer.txt").read_text() == "yes\n"


def test_an_escalation_hook_refused_is_reported_cut_and_the_report_still_written(
    tmp_path: Path,
) -> None:
    from harness.core.errors import HarnessError
    from tests.conftest import RecordingSink

    repo = make_repo(tmp_path / "repo", {"answer.txt": "no\n"})
    sink = RecordingSink()

    def refuse(report: Path) -> None:
        raise HarnessError("pinned file changed: " + "x" * 1200)

    result = _loop(repo, ScriptedModel([_write("maybe\n"), "done"]), events=sink,
                   on_escalate=refuse).run()  # fmt: skip

    assert result.stop_reason is StopReason.MAX_ITERATIONS
    assert result.escalation is not None
    assert "# Escalation" in result.escalation.read_text()
    closing = [(kind, data) for kind, data in sink.events if kind in (*RECORDS, "hook_failed")]
    assert [kind for kind, _ in closing] == ["round_end", "hook_failed", "escalation", "stop",
                                             "run_end"]  # fmt: skip
    failed = closing[1][1]
    assert failed["hook"] == "on_escalate"
    assert failed["error"] == ("pinned file changed: " + "x" * 1200)[:1000]  # cut at 1,000


def test_a_restored_round_is_named_until_the_next_round_is_played(tmp_path: Path) -> None:
    from harness.outer.keep import restore_round
    from harness.tools import tool
    from harness.tools.builtin import default_tools

    repo = make_repo(tmp_path / "repo", {"answer.txt": "no\n"})
    path = tmp_path / "progress" / "answer.md"
    rounds = [_write("maybe\n"), "done", _write("perhaps\n"), "done"]
    first = _loop(repo, ScriptedModel(rounds), path, max_iterations=2).run()
    assert first.stop_reason is StopReason.MAX_ITERATIONS
    restore_round(path, repo, 1)
    assert "Restored: 1" in path.read_text()
    during: list[str] = []

    @tool
    def peek() -> str:
        """Look at the progress file while the round goes on."""
        during.append(path.read_text())
        return "seen"

    model = ScriptedModel.per_round({3: [ToolCall("peek", {}), _write("still no\n"), "done"]})
    second = OuterLoop(GOAL, Agent(model, [*default_tools(), peek], max_tokens=200),
                       gates=[SAYS_YES], workspace=repo, progress=path, max_iterations=3,
                       patience=10).run()  # fmt: skip

    assert second.stop_reason is StopReason.MAX_ITERATIONS
    assert "Restored: 1" in during[0]  # resumed, the branch still holds round 1
    assert git(repo, "show", f"{second.branch}:answer.txt") == "still no"
    assert "Restored:" not in path.read_text()  # the branch holds round 3 now


RECORDS = ("round_end", "stop", "escalation", "run_end")
"""The events records.py emits as a round is saved and a run finishes."""


def test_the_finish_hook_is_told_the_verdict_once_and_its_lines_are_the_results_connectors(
    tmp_path: Path,
) -> None:
    from harness.outer.result import RunResult

    repo = make_repo(tmp_path / "repo", {"answer.txt": "no\n"})
    told: list[RunResult] = []

    def on_finish(result: RunResult) -> tuple[str, ...]:
        told.append(result)
        return ("connector issue_comment: commented on #5",)

    result = _loop(repo, ScriptedModel([_write("maybe\n"), "done"]), on_finish=on_finish).run()

    assert result.stop_reason is StopReason.MAX_ITERATIONS  # the hook cannot change it
    assert result.connectors == ("connector issue_comment: commented on #5",)
    assert [(r.stop_reason, r.connectors, r.escalation) for r in told] == [
        (StopReason.MAX_ITERATIONS, (), result.escalation),
    ]


def test_a_passed_runs_worktree_is_parked_for_the_next_run_unless_kept(tmp_path: Path) -> None:
    from harness.workspace.parked import parked_worktrees

    for keep in (False, True):
        repo = make_repo(tmp_path / f"keep-{keep}", {"answer.txt": "no\n"})

        result = _loop(repo, ScriptedModel([_write("yes\n"), "done"]), keep_worktree=keep).run()

        assert result.passed
        assert result.worktree is not None
        parked = parked_worktrees(result.worktree.parent)
        if keep:
            assert parked == []
            assert (result.worktree / "answer.txt").read_text() == "yes\n"
        else:
            assert not result.worktree.exists()
            (place,) = parked  # kept, detached, for the next run to take
            assert (place / "answer.txt").read_text() == "yes\n"
            assert git(place, "rev-parse", "--abbrev-ref", "HEAD") == "HEAD"


def test_each_round_records_its_gates_and_the_critics_score(tmp_path: Path) -> None:
    from harness import Critic
    from harness.memory.progress_items import GateSummary
    from tests.conftest import verdict_call

    repo = make_repo(tmp_path / "repo", {"answer.txt": "no\n"})
    path = tmp_path / "progress" / "answer.md"
    second = CommandGate("test -f answer.txt", name="exists")
    critic = Critic(ScriptedModel([verdict_call(8)]))

    result = _loop(repo, ScriptedModel([_write("maybe\n"), "done", _write("yes\n"), "done"]),
                   path, max_iterations=2, critic=critic, gates=[second, SAYS_YES]).run()  # fmt: skip

    assert result.passed
    first, last = Progress.load(path).attempts
    assert first.gates == (
        GateSummary(name="exists", passed=True, detail=""),
        GateSummary(name="says yes", passed=False, detail=""),
    )
    assert first.critic_score is None  # the critic judges a round whose gates pass
    assert last.gates == (
        GateSummary(name="exists", passed=True, detail=""),
        GateSummary(name="says yes", passed=True, detail=""),
    )
    assert last.critic_score == 8
    assert "- Critic: 8.0/10" in path.read_text()
