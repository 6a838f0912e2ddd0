"""Every round kept with its results, and the way back to any of them.

* In git, round ``N`` is kept as the ref ``refs/harness/rounds/<branch leaf>/<N>``
  (:mod:`harness.workspace.round_refs`) on the commit that holds its files; the commit's message
  and progress.md's attempt carry its gate results and critic score.
* Outside git, round ``N`` is a snapshot of the workspace's files with a ``round.json`` of its
  results (:mod:`harness.workspace.snapshots`), in the user's state folder
  (``<state home>/rounds/<key of the loop's progress file>/<N>/``), out of the agent's reach. A
  run that starts at round 1 starts a fresh set.

:func:`restore_round` brings a round back: in git as a new commit on the run branch holding the
round's files exactly (nothing of the later rounds is lost), outside git by making the
workspace's files exactly the snapshot's (the files it replaces are kept first).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from harness.core.errors import BookkeepingError, ConfigError
from harness.core.redact import redact_strings
from harness.core.state_home import state_folder
from harness.memory.lock import LoopLock
from harness.memory.progress import Progress
from harness.memory.run_state import RunState
from harness.observe.run_summary import RUNS_DIR
from harness.outer.best import RoundMark, best_of
from harness.outer.decision import RoundReport
from harness.outer.run import Run, own_files
from harness.workspace.git_cmd import GitIsolationError
from harness.workspace.round_refs import keep_round as keep_ref
from harness.workspace.round_refs import kept_round, restore_commit, round_diff, round_ref
from harness.workspace.snapshots import Snapshots
from harness.workspace.workspace import truncate_diff

REPORT_DIFF_CHARS = 8_000
"""How much of the diff between the best and the last round the escalation report shows."""


def snapshots(workspace: Path, progress_path: Path | None) -> Snapshots:
    """Where the rounds of a loop working outside git in ``workspace`` are kept."""
    folder = state_folder("rounds", progress_path if progress_path is not None else workspace)
    return Snapshots(folder, workspace.resolve(), harness_paths(workspace, progress_path))


def run_snapshots(run: Run) -> Snapshots:
    """Where the rounds of ``run`` are kept when it works outside git."""
    return snapshots(run.workspace.path, run.progress.path if run.progress else None)


def harness_paths(workspace: Path, progress_path: Path | None) -> tuple[str, ...]:
    """The harness's own paths inside ``workspace`` (run logs, progress and its companions),
    as a snapshot's ``exclude``: never the work of a round or of a person."""
    workspace = workspace.resolve()
    exclude = [RUNS_DIR.as_posix() + "/"]
    for path in own_files(progress_path):
        if path.resolve().is_relative_to(workspace):
            exclude.append(path.resolve().relative_to(workspace).as_posix())
    return tuple(exclude)


def keep_round(
    run: Run, report: RoundReport, files_at: str | None, redact: Callable[[str], str]
) -> None:
    """Keep ``report``'s round (in git: ``files_at``, the commit holding its files; else a
    snapshot whose record passes ``redact``, the run's redactor)."""
    workspace = run.workspace
    if workspace.branch is not None and workspace.root is not None:
        if files_at is None:
            return
        try:
            keep_ref(workspace.root, workspace.branch, report.round, files_at)
        except GitIsolationError as exc:
            raise BookkeepingError(
                f"the harness could not keep round {report.round}: {exc}"
            ) from exc
        return
    where = run_snapshots(run)
    if report.round == 1 and where.folder.exists():  # a new run: an earlier run's rounds go
        shutil.rmtree(where.folder)
    where.take(report.round, redact_strings(round_record(report), redact))


def best_round_note(run: Run, best: RoundMark | None) -> str:
    """What the escalation report says of the best round: which, where it is kept, how to bring
    it back, and how the last round differs from it."""
    if best is None:
        return ""
    last = run.reports[-1].round if run.reports else best.round
    lines = [f"The best round by the documented order is {best.describe()}; the last was {last}."]
    workspace = run.workspace
    if workspace.branch is not None and workspace.root is not None:
        if kept_round(workspace.root, workspace.branch, best.round) is None:
            return lines[0]
        where = f"It is kept as `{round_ref(workspace.branch, best.round)}`"
    else:
        where = f"Its files are kept in `{run_snapshots(run).folder / str(best.round)}`"
    lines.append(
        f"{where}; `harness restore LOOP` brings it back (LOOP: its loop.toml or its folder; "
        "`--round N` brings back another round)."
    )
    if last != best.round:
        try:
            if workspace.branch is not None and workspace.root is not None:
                diff = round_diff(workspace.root, workspace.branch, best.round, last)
            else:
                diff = run_snapshots(run).diff(best.round, last)
            diff = truncate_diff(diff, REPORT_DIFF_CHARS)
        except (BookkeepingError, GitIsolationError) as exc:
            diff = f"(no diff: {exc})\n"
        lines.append(f"What changed from round {best.round} to round {last}:\n\n```diff\n{diff}```")
    return "\n\n".join(lines)


def round_record(report: RoundReport) -> dict[str, object]:
    """The results kept beside a round's snapshot."""
    return {
        "round": report.round,
        "outcome": report.outcome,
        "passed": report.passed,
        "gates": [{"name": g.name, "passed": g.passed, "summary": g.summary} for g in report.gates],
        "critic_score": report.verdict.score if report.verdict else None,
        "critic_reasons": list(report.verdict.reasons) if report.verdict else [],
    }


def restore_round(progress_path: Path, workspace: Path, number: int | None) -> str:
    """Bring round ``number`` (default: the best by :mod:`harness.outer.best`) of the loop whose
    progress file is ``progress_path`` back into its work; what was done, in one line."""
    if not progress_path.is_file():
        raise ConfigError(f"{progress_path}: no such progress file; the loop has not run")
    with LoopLock(progress_path):
        progress = Progress.load(progress_path)
        played = {attempt.round for attempt in progress.attempts}
        if number is None:
            best = best_of(progress.attempts, ())
            if best is None:
                raise ConfigError(f"{progress_path}: no round has been played yet")
            number, said = best.round, f"the best, {best.describe()}"
        else:
            said = f"round {number}"
        if number not in played:
            rounds = ", ".join(str(n) for n in sorted(played)) or "none"
            raise ConfigError(f"--round {number}: no such round (played: {rounds})")
        state = RunState.read(progress)
        if state.branch is None:
            snapshots(workspace, progress_path).restore(number)
            return f"restored {said}: the files of {workspace} are that round's"
        worktree = Path(state.worktree) if state.worktree else None
        root = worktree if worktree is not None and worktree.is_dir() else progress_path.parent
        head = restore_commit(root, state.branch, number)
        RunState(state.branch, state.worktree, state.base, head, state.pins, number).write(progress)
        progress.save()
        return f"restored {said}: branch {state.branch} now holds its files (commit {head[:12]})"
