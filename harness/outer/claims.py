"""A pass read back from disk is checked, never trusted.

progress.md lives where the agent's shell may reach it: a ``Status: passed`` line is only a
claim. :func:`unconfirmed_pass` believes it when the last recorded round passed and the gates
still pass on a clean checkout of that round's commit (protected paths as at the run's base).
"""

from __future__ import annotations

from pathlib import Path

from harness.memory.progress import Progress
from harness.memory.run_state import RunState
from harness.outer.change import tree_change
from harness.outer.settings import Settings
from harness.verify.base_results import measure_at_base
from harness.verify.gates import GateReport, run_gates
from harness.workspace.checkout import clean_checkout, delivered_tree
from harness.workspace.cleanup import top_of
from harness.workspace.git_cmd import run_git


def unconfirmed_pass(settings: Settings, progress: Progress) -> str | None:
    """Why the pass ``progress`` claims cannot be confirmed; None when it is confirmed."""
    last = progress.attempts[-1] if progress.attempts else None
    if last is None or last.outcome != "passed":
        recorded = f"its last round ended {last.outcome!r}" if last else "it records no round"
        return f"progress.md says passed, but {recorded}"
    if not settings.gates:
        return None  # a critic-only loop: the recorded verdict is all there is to go on
    state = RunState.read(progress)
    commit, base = last.commit or state.head, state.base
    root = top_of(Path(settings.workspace))
    if not (commit and base) or root is None:
        reports = run_gates(settings.gates, settings.workspace)  # outside git: the folder itself
        return _failed(reports, "the workspace")
    for sha in (commit, base):
        if run_git(root, ("cat-file", "-e", f"{sha}^{{commit}}"), None).returncode != 0:
            return f"progress.md says passed at {commit[:12]}, but {sha[:12]} is not a commit here"
    if run_git(root, ("merge-base", "--is-ancestor", base, commit), None).returncode != 0:
        return f"progress.md says passed at {commit[:12]}, which does not descend from the base"
    where = Path(settings.workspace)
    held = commit if state.branch is not None else None  # None: the pass lives in the folder
    tree = delivered_tree(root, where, base=base, protect=settings.protect, commit=held)
    change = tree_change(root, where, base=base, tree=tree)
    baselines = measure_at_base(
        settings.gates, base=base, folder=change.folder, checkout=change.checkout_base
    )
    with clean_checkout(root, where, base=base, protect=settings.protect, commit=held) as copy:
        reports = run_gates(settings.gates, copy, baselines=baselines, change=change)
    return _failed(reports, f"its commit {commit[:12]}" if held else "the workspace as it stands")


def _failed(reports: list[GateReport], where: str) -> str | None:
    failed = next((report for report in reports if not report.passed), None)
    if failed is None:
        return None
    return f"progress.md says passed, but gate {failed.name} fails on {where}: {failed.summary}"
