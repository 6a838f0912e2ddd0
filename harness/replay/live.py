"""What a live replay (``harness replay --live``) adds to a replay's report: how the run the live
models went on with ended, and where its work is kept.

A replay runs in a temporary clone of the repository. Once the live models took over, the
rounds they played are new work, and the loop is left as a normal run of it would leave it: the
run's branch (``worktree`` or ``branch`` isolation) is fetched into the repository the replay was
made from under the name a run of that loop gets, with the keys such a run sets (its base, the
loop it belongs to), and the replay's progress file becomes the loop's own (naming that branch;
the earlier one set aside as ``NAME.previous.md``, as a restart sets it aside), so ``harness
status`` reads where the loop now stands and ``harness run`` goes on from there. A run with
``isolation = "none"`` has no branch, and its work goes with the clone.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from harness.core import nofollow
from harness.memory.lock import LockHeld, LoopLock
from harness.memory.progress import Progress
from harness.memory.run_state import RunState
from harness.outer.result import RunResult
from harness.outer.run import previous_name
from harness.workspace.git import BRANCH_PREFIX, PART, loop_identity, ref_stem
from harness.workspace.git_cmd import branch_exists, config_get, git


@dataclass(frozen=True)
class Kept:
    """Where a live replay's work went: the branch in the user's repository (None: nowhere),
    and what to tell the person."""

    branch: str | None
    said: str


def keep_work(
    repo: Path,
    checkout: Path,
    branch: str | None,
    *,
    loop_name: str,
    replayed: Path,
    progress: Path,
) -> Kept:
    """Fetch the run's ``branch`` of the replay's ``checkout`` into ``repo`` as the branch of a
    run of the loop whose progress file is ``progress``, and make the replay's progress file
    (``replayed``) that loop's own."""
    if branch is None or not branch_exists(checkout, branch):
        said = "its work stayed in the replay's clone, which is removed: the run has no branch"
        return Kept(None, said)
    ours = f"{BRANCH_PREFIX}{ref_stem(loop_name, progress)}{PART}{branch.rsplit(PART, 1)[-1]}"
    if branch_exists(repo, ours):
        return Kept(
            None, f"its work stayed in the replay's clone: {repo} already has a branch {ours}"
        )
    refspec = f"refs/heads/{branch}:refs/heads/{ours}"
    git(repo, "fetch", "--quiet", "--no-tags", str(checkout), refspec)
    base = config_get(checkout, f"branch.{branch}.harnessBase")
    if base is not None:  # every run branch has one
        git(repo, "config", f"branch.{ours}.harnessBase", base)
    git(repo, "config", f"branch.{ours}.harnessLoop", loop_identity(progress))
    said = f"its work is on branch {ours} in {repo}"
    return Kept(ours, "\n".join([said, *_take_progress(replayed, progress, ours)]))


def _take_progress(replayed: Path, progress: Path, branch: str) -> list[str]:
    """Make ``replayed`` the loop's progress file at ``progress``, naming ``branch`` as its run's
    (no worktree: a run makes one as it resumes), under the loop's lock; the line to tell the
    person (none when the replay left no progress file)."""
    if not replayed.is_file():
        return []
    state = Progress.load(replayed)
    run = RunState.read(state)
    dataclasses.replace(run, branch=branch, worktree=None).write(state)
    try:
        with LoopLock(progress):
            aside = nofollow.rename(progress, previous_name(progress).name)
            state.save(progress)
    except LockHeld:
        return [f"the loop is running elsewhere, so its progress ({progress}) was left as it was"]
    earlier = f", the earlier one set aside as {previous_name(progress).name}" if aside else ""
    return [f"the loop's progress ({progress}) is the replay's now{earlier}"]


def run_end(result: RunResult) -> str:
    """How the run ended: its stop, and the last round's verdict."""
    if not result.rounds:
        return f"the run ended {result.stop_reason.value} before any round ended"
    last = result.rounds[-1]
    verdict = last.verdict and (last.verdict.score, last.verdict.passed)
    judged = f"verdict {verdict_text(verdict)}" if verdict else "no verdict"
    return f"the run ended {result.stop_reason.value} after round {last.round} ({judged})"


def verdict_text(verdict: tuple[float, bool] | None) -> str:
    """``9/10, passed``, or ``no verdict``."""
    if verdict is None:
        return "no verdict"
    score, passed = verdict
    return f"{score:g}/10, {'passed' if passed else 'failed'}"
