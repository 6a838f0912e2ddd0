"""A fleet's evaluation gate made of ordinary gates, checked on each subtask's own branch.

A subtask's worktree is gone once its loop passed; its branch stays. The gates run in a
temporary detached checkout of that branch (removed afterwards), so they see exactly what the
subtask produced and nothing of the user's checkout or of another subtask.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from harness.outer.result import RunResult
from harness.verify.gates import Gate, run_gates
from harness.workspace.git_cmd import git


def gates_on_branch(gates: Sequence[Gate], workspace: Path) -> Callable[[object, RunResult], bool]:
    """``evaluate(subtask, result)``: every gate passes on the result's branch (or workspace)."""

    def evaluate(subtask: object, result: RunResult) -> bool:
        if not result.branch:
            return all(report.passed for report in run_gates(gates, workspace))
        top = Path(git(workspace, "rev-parse", "--show-toplevel").strip())
        inside = workspace.resolve().relative_to(top.resolve())
        with tempfile.TemporaryDirectory(prefix="harness-evaluate-") as tmp:
            checkout = Path(tmp) / "checkout"
            git(top, "worktree", "add", "--detach", "-q", str(checkout), result.branch)
            try:
                return all(report.passed for report in run_gates(gates, checkout / inside))
            finally:
                git(top, "worktree", "remove", "--force", str(checkout))

    return evaluate
