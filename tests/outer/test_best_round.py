"""Every round kept; a loop that regresses names its best round, and restoring it gives its files."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from harness import Agent, CommandGate, Critic, OuterLoop, RunResult, ScriptedModel, ToolCall
from harness.cli.commands import print_verdict
from harness.core.stop import StopReason
from harness.outer.keep import snapshots
from harness.outer.options import ArtifactFile
from harness.outer.rules import Rollback
from harness.workspace.round_refs import round_ref
from tests.cli.test_cli import harness
from tests.conftest import git, make_repo, verdict_call

DRAFTS = ("one\n", "two\n", "three\n")
SCORES = (5, 7, 4)  # round 3 regresses below round 2
BEST = "round 2 (1/1 gates passed, critic 7.0/10)"
LOOP_TOML = """\
name = "essay"
goal = "write the draft"
workspace = "."
progress = "progress/essay.md"
isolation = "{isolation}"
[[gates]]
type = "command"
name = "draft"
cmd = "test -s work/draft.md"
"""


def write(text: str, *more: ToolCall) -> list[object]:
    """An author round: write ``text`` to the draft (and ``more``), then answer."""
    return [ToolCall("write_file", {"path": "work/draft.md", "content": text}), *more, "done"]


def play(
    folder: Path, *, isolation: str, rollback: Rollback = "keep", rounds: list[list[object]]
) -> tuple[RunResult, ScriptedModel]:
    """Three rounds of the essay loop in ``folder`` with the critic scoring :data:`SCORES`."""
    author = ScriptedModel([entry for round_ in rounds for entry in round_])
    result = OuterLoop(
        "write the draft",
        Agent(author),
        gates=[CommandGate("test -s work/draft.md", name="draft")],
        critic=Critic(ScriptedModel([verdict_call(s) for s in SCORES])),
        progress=folder / "progress" / "essay.md",
        max_iterations=3,
        workspace=folder,
        isolation=isolation,  # type: ignore[arg-type]
        name="essay",
        rollback=rollback,
        critic_artifact=ArtifactFile("work/draft.md"),
    ).run()
    return result, author


def names_round_2(folder: Path, result: RunResult) -> None:
    """The result, the verdict `harness run` prints, the escalation report and `harness status`
    all name round 2 as the best."""
    assert result.stop_reason is StopReason.MAX_ITERATIONS
    assert (result.best_round, result.best) == (2, BEST)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        print_verdict(result, quiet=False)
    assert f"best round: {BEST}; `harness restore` brings it back\n" in printed.getvalue()
    assert result.escalation is not None
    report = result.escalation.read_text()
    assert f"The best round by the documented order is {BEST}; the last was 3." in report
    assert "best round by the documented order is round 3" not in report
    status = harness("status", str(folder), cwd=folder)
    assert status.returncode == 0, status.stderr
    assert status.stdout.strip().endswith(f"last: failed: critic 4.0/10, best: {BEST}")


@pytest.mark.parametrize("rollback", ["keep", "failed"])
def test_a_git_loop_that_regresses_names_round_2_and_restores_its_files(
    tmp_path: Path, rollback: Rollback
) -> None:
    repo = make_repo(tmp_path / "repo", {"loop.toml": LOOP_TOML.format(isolation="worktree")})
    extra = ToolCall("write_file", {"path": "work/late.txt", "content": "only round 3\n"})
    result, _ = play(
        repo,
        isolation="worktree",
        rollback=rollback,
        rounds=[write(DRAFTS[0]), write(DRAFTS[1]), write(DRAFTS[2], extra)],
    )
    names_round_2(repo, result)
    assert result.branch is not None
    assert result.worktree is not None
    kept = [git(repo, "rev-parse", round_ref(result.branch, n)) for n in (1, 2, 3)]
    assert [git(repo, "show", f"{sha}:work/draft.md") + "\n" for sha in kept] == list(DRAFTS)
    report = result.escalation.read_text()
    assert f"It is kept as `{round_ref(result.branch, 2)}`" in report
    assert "What changed from round 2 to round 3:" in report
    assert "-two\n+three\n" in report

    restored = harness("restore", cwd=repo)
    assert restored.returncode == 0, restored.stderr
    assert restored.stdout.startswith(f"restored the best, {BEST}: branch {result.branch} now")
    tip_tree = git(repo, "rev-parse", f"{result.branch}^{{tree}}")
    assert tip_tree == git(repo, "rev-parse", f"{kept[1]}^{{tree}}")  # round 2's files exactly
    assert (result.worktree / "work/draft.md").read_text() == "two\n"
    assert not (result.worktree / "work/late.txt").exists()
    assert git(repo, "rev-parse", round_ref(result.branch, 3)) == kept[2]  # round 3 still kept
    head = git(repo, "rev-parse", result.branch)
    assert f"Head: {head}" in (repo / "progress/essay.md").read_text()  # a resume starts here

    again = harness("restore", "--round", "3", cwd=repo)
    assert again.returncode == 0, again.stderr
    assert (result.worktree / "work/draft.md").read_text() == "three\n"
    assert (result.worktree / "work/late.txt").read_text() == "only round 3\n"


def test_a_content_loop_without_git_keeps_every_draft_and_restores_round_2(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "content"
    folder.mkdir()
    (folder / "loop.toml").write_text(LOOP_TOML.format(isolation="none"))
    (folder / "brief.md").write_text("the brief\n")
    extra = ToolCall("write_file", {"path": "work/late.txt", "content": "only round 3\n"})
    result, _ = play(
        folder,
        isolation="none",
        rounds=[write(DRAFTS[0]), write(DRAFTS[1]), write(DRAFTS[2], extra)],
    )
    names_round_2(folder, result)
    kept = snapshots(folder, folder / "progress" / "essay.md")
    assert [kept.kept(n)["work/draft.md"].decode() for n in (1, 2, 3)] == list(DRAFTS)
    assert set(kept.kept(2)) == {"brief.md", "loop.toml", "work/draft.md"}  # no progress files
    records = [kept.record(n) for n in (1, 2, 3)]
    assert [r["critic_score"] if r else None for r in records] == [5.0, 7.0, 4.0]
    assert [r["outcome"] if r else None for r in records] == [
        f"failed: critic {s}.0/10" for s in SCORES
    ]
    report = result.escalation.read_text() if result.escalation else ""
    assert "What changed from round 2 to round 3:" in report
    assert "-two\n+three\n" in report
    assert "+only round 3\n" in report

    restored = harness("restore", cwd=folder)
    assert restored.returncode == 0, restored.stderr
    assert restored.stdout == f"restored the best, {BEST}: the files of {folder} are that round's\n"
    assert (folder / "work/draft.md").read_text() == "two\n"
    assert not (folder / "work/late.txt").exists()
    now = {rel: path.read_bytes() for rel, path in kept.files().items()}
    assert now == kept.kept(2)  # the workspace's files are exactly round 2's
    before = kept.folder / "before-restore" / "files"
    assert (before / "work/late.txt").read_text() == "only round 3\n"  # what it replaced is kept
    assert (before / "work/draft.md").read_text() == "three\n"

    missing = harness("restore", str(folder), "--round", "4", cwd=tmp_path)
    assert missing.returncode == 2
    assert missing.stderr == "harness: --round 4: no such round (played: 1, 2, 3)\n"


def test_a_passing_loop_names_its_passing_round_and_says_nothing_of_a_best_one(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "content"
    folder.mkdir()
    result = OuterLoop(
        "write the draft",
        Agent(ScriptedModel([*write("one\n"), *write("two\n")])),
        critic=Critic(ScriptedModel([verdict_call(5), verdict_call(9)])),
        max_iterations=3,
        workspace=folder,
        isolation="none",
    ).run()
    assert result.passed
    assert (result.best_round, result.best) == (2, "round 2 (passed, critic 9.0/10)")
    assert result.escalation is None
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        print_verdict(result, quiet=False)
    assert "best round" not in printed.getvalue()


def test_each_snapshot_records_the_rounds_gates_and_reasons(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    result, _ = play(folder, isolation="none", rounds=[write(d) for d in DRAFTS])
    assert result.best_round == 2
    record = snapshots(folder, folder / "progress" / "essay.md").record(3)
    assert record is not None
    assert json.loads(json.dumps(record)) == {
        "round": 3,
        "outcome": "failed: critic 4.0/10",
        "passed": False,
        "gates": [{"name": "draft", "passed": True, "summary": record["gates"][0]["summary"]}],  # type: ignore[index]
        "critic_score": 4.0,
        "critic_reasons": ["ok"],
    }


def test_a_round_that_cannot_be_kept_stops_the_run_with_error_naming_it(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    (repo / ".git" / "refs" / "harness").write_text("in the way\n")  # no ref can be made below
    result = OuterLoop(
        "write the draft",
        Agent(ScriptedModel(write("one\n"))),
        critic=Critic(ScriptedModel([verdict_call(5)])),
        max_iterations=2,
        workspace=repo,
    ).run()
    assert result.stop_reason is StopReason.ERROR
    assert result.message.startswith(
        "round 1 could not be recorded: the harness could not keep round 1: git update-ref"
    )


def test_restore_names_what_is_missing_a_loop_toml_or_a_round_played(tmp_path: Path) -> None:
    empty = harness("restore", cwd=tmp_path)
    assert empty.returncode == 2
    assert empty.stderr.startswith("harness: loop.toml: no such file; `harness init KIND` writes")
    (tmp_path / "loop.toml").write_text(LOOP_TOML.format(isolation="none"))
    unplayed = harness("restore", cwd=tmp_path)
    assert unplayed.returncode == 2
    progress = tmp_path / "progress" / "essay.md"
    assert unplayed.stderr == f"harness: {progress}: no such progress file; the loop has not run\n"
    assert unplayed.stdout == ""


def test_restore_moves_the_run_branch_only_even_when_its_checkout_is_on_another_branch(
    tmp_path: Path,
) -> None:
    files = {"loop.toml": LOOP_TOML.format(isolation="branch"), ".gitignore": "progress/\n"}
    repo = make_repo(tmp_path / "repo", files)
    result, _ = play(repo, isolation="branch", rounds=[write(d) for d in DRAFTS])
    assert (result.best_round, result.origin) == (2, "main")
    assert result.branch is not None
    git(repo, "checkout", "--quiet", "main")  # the person went back to their own branch
    main_before = git(repo, "rev-parse", "main")

    restored = harness("restore", cwd=repo)
    assert restored.returncode == 0, restored.stderr
    assert git(repo, "rev-parse", "main") == main_before  # their branch and files untouched
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "main"
    assert not (repo / "work/draft.md").exists()
    tip = git(repo, "rev-parse", result.branch)
    assert restored.stdout.endswith(f"now holds its files (commit {tip[:12]})\n")
    kept = git(repo, "rev-parse", round_ref(result.branch, 2))
    assert git(repo, "rev-parse", f"{tip}^{{tree}}") == git(repo, "rev-parse", f"{kept}^{{tree}}")
    assert git(repo, "show", f"{tip}:work/draft.md") == "two"
    assert f"Head: {tip}" in (repo / "progress/essay.md").read_text()
