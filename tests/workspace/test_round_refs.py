"""Round refs: a round kept after its branch moves on, gone with the branch."""

from __future__ import annotations

from pathlib import Path

from harness.workspace.cleanup import remove_branch
from harness.workspace.round_refs import keep_round, kept_round, round_diff, round_ref
from tests.conftest import git, make_repo

BRANCH = "harness/essay.0123abcd.89abcdef"


def test_a_kept_round_outlives_a_reset_and_goes_with_its_branch(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"draft.md": "one\n"})
    first = git(repo, "rev-parse", "HEAD")
    git(repo, "branch", BRANCH)
    keep_round(repo, BRANCH, 1, first)
    (repo / "draft.md").write_text("two\n")
    git(repo, "commit", "-qam", "two")
    keep_round(repo, BRANCH, 2, git(repo, "rev-parse", "HEAD"))
    git(repo, "reset", "-q", "--hard", first)  # a rollback: the commit is on no branch now
    assert round_ref(BRANCH, 2) == "refs/harness/rounds/essay.0123abcd.89abcdef/2"
    assert git(repo, "show", f"{kept_round(repo, BRANCH, 2)}:draft.md") == "two"
    assert "-one\n+two\n" in round_diff(repo, BRANCH, 1, 2)
    assert kept_round(repo, BRANCH, 3) is None
    remove_branch(repo, BRANCH)
    assert git(repo, "for-each-ref", "refs/harness/") == ""
    assert kept_round(repo, BRANCH, 1) is None
