"""Which run of a watched loop a review is of, and its note for that run's next round; when
each run's last round was committed (the reviews trigger takes what was written after).

The runs are those whose progress files name a branch: the loop's own, and those of the loops it
started for issues (``NAME-issue-N``) and pushed branches (``NAME-push-SLUG``). The review's
pull request must be the one the host has open from one of those branches
(:func:`harness.connect.reviews.own_branch`); nothing else in the delivery is taken as a name.
"""

from __future__ import annotations

import glob
import re
from datetime import datetime

from harness.assemble.connectors import host_of
from harness.connect.reviews import Review, own_branch, with_inline
from harness.core.errors import ConfigError
from harness.memory.inbox import Inbox
from harness.memory.progress import Progress
from harness.memory.run_state import RunState
from harness.spec import LoopSpec
from harness.spec.outline import progress_path
from harness.workspace.git_cmd import run_git


def own_runs(spec: LoopSpec) -> dict[str, Progress]:
    """The branch of each run of ``spec``'s loop and of the loops it started, with its progress."""
    own = spec.progress_path()
    folder = progress_path(spec.root, spec.name, None).parent
    started = [folder.glob(f"{glob.escape(spec.name)}-{kind}-*.md") for kind in ("issue", "push")]
    runs: dict[str, Progress] = {}
    for path in [own, *sorted(p for found in started for p in found)]:
        try:
            progress = Progress.load(path)
        except (ConfigError, OSError):
            continue
        if path != own and progress.name != path.stem:  # a run set aside, a report
            continue
        branch = RunState.read(progress).branch
        if branch:
            runs.setdefault(branch, progress)
    return runs


def run_heads(spec: LoopSpec) -> dict[str, datetime]:
    """Each branch of the runs of ``spec``'s loops with when its last round was committed (the
    run's start when no round was)."""
    heads = {}
    for branch, progress in own_runs(spec).items():
        state = RunState.read(progress)
        commit = state.head or state.base
        if not commit:
            continue
        when = ("log", "-1", "--format=%cI", "--end-of-options", commit)
        found = run_git(spec.root / spec.workspace, when, None)
        if found.returncode == 0 and found.stdout.strip():
            heads[branch] = datetime.fromisoformat(found.stdout.strip())
    return heads


def reviewed_loop(spec: LoopSpec, review: Review) -> tuple[LoopSpec, int | None]:
    """The loop whose run's pull request ``review`` is of, and the issue that loop came from;
    the review is queued (redacted) as a note for its next round. A
    :class:`~harness.connect.github.HostError` when the pull request is none of its runs'."""
    assert spec.github is not None, "LoopSpec checks that reviewers come with [github]"
    runs = own_runs(spec)
    redact = spec.redactor().redact_text
    client = host_of(spec.github, redact).client()
    progress = runs[own_branch(client, review.pull, runs)]
    if review.review_id is not None:
        review = with_inline(review, client.review_comments(review.pull, review.review_id))
    loop = spec
    if progress.path != spec.progress_path():
        loop = spec.with_changes(name=progress.name, progress=None, goal=progress.goal)
    Inbox(loop.progress_path()).add_note(redact(review.note()))
    issue = re.fullmatch(rf"{re.escape(spec.name)}-issue-(\d+)", loop.name)
    return loop, int(issue.group(1)) if issue else None
