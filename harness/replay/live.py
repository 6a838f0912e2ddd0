"""What a live replay (``harness replay --live``) adds to a replay's report: how the run the live
models went on with ended, and where its work is kept.

A replay runs in a temporary clone of the repository. Once the live models took over, the
rounds they played are new work: the run's branch (``worktree`` or ``branch`` isolation) is
fetched into the repository the replay was made from, under the same name, before the clone
is removed. A run with ``isolation = "none"`` has no branch, and its work goes with the clone.
"""

from __future__ import annotations

from pathlib import Path

from harness.outer.result import RunResult
from harness.workspace.git_cmd import branch_exists, git


def keep_branch(repo: Path, checkout: Path, branch: str | None) -> str:
    """Fetch ``branch`` of the replay's ``checkout`` into ``repo``; say where the work is."""
    if branch is None or not branch_exists(checkout, branch):
        return "its work stayed in the replay's clone, which is removed: the run has no branch"
    if branch_exists(repo, branch):
        return f"its work stayed in the replay's clone: {repo} already has a branch {branch}"
    ref = f"refs/heads/{branch}"
    git(repo, "fetch", "--quiet", "--no-tags", str(checkout), f"{ref}:{ref}")
    return f"its work is on branch {branch} in {repo}"


def run_end(result: RunResult) -> str:
    """How the run ended: its stop, and the last round's verdict."""
    if not result.rounds:
        return f"the run ended {result.stop_reason.value} before any round ended"
    last = result.rounds[-1]
    verdict = last.verdict
    judged = (
        "no verdict"
        if verdict is None
        else f"verdict {verdict.score:g}/10, {'passed' if verdict.passed else 'failed'}"
    )
    return f"the run ended {result.stop_reason.value} after round {last.round} ({judged})"
