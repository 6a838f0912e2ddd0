"""What a run leaves behind: each round saved for good, and the finish (a pass or an escalation)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from harness.core.errors import HarnessError
from harness.core.event_schema import Escalation as EscalationEvent
from harness.core.event_schema import HookFailed, RoundEnd, RunEnd
from harness.core.event_schema import Stop as StopEvent
from harness.core.stop import StopReason
from harness.memory.progress import Progress
from harness.memory.progress_items import Attempt
from harness.memory.progress_terms import Status
from harness.memory.spend import spend_path
from harness.outer.best import RoundMark, best_of
from harness.outer.cascade import spent_lines
from harness.outer.decision import RoundReport, gate_summary
from harness.outer.escalation import Escalation, escalate
from harness.outer.keep import best_round_note, keep_round, run_snapshots
from harness.outer.result import RunResult
from harness.outer.run import Run, run_warning, save_progress, save_spent, unsandboxed
from harness.outer.settings import Settings
from harness.workspace.git import GitIsolationError


def record_round(settings: Settings, run: Run, report: RoundReport, draft: Progress | None) -> None:
    """Save the round for good: its files kept (:mod:`harness.outer.keep`), progress.md
    (atomic, with the checklist and resume point the agent left in ``draft``), then its
    ``round_end`` event."""
    head = report.commit or run.state.head
    keep_round(run, report, head, settings.redact)
    if settings.rollback == "failed" and not report.passed and run.workspace.branch:
        head = run.state.head or run.workspace.base_commit
        if head is not None:
            run.workspace.reset_to(head)
    restored = run.state.restored if head == run.state.head else None  # a round's files since
    run.state = dataclasses.replace(run.state, head=head, restored=restored)
    if run.progress is not None:
        if draft is not None:
            run.progress.checklist = draft.checklist
            run.progress.resume_point = draft.resume_point
        run.progress.record_attempt(
            report.outcome,
            gates=[gate_summary(g) for g in report.gates],
            critic_score=report.verdict.score if report.verdict else None,
            tokens=report.usage.total_tokens,
            cost_usd=report.usage.cost_usd,
            commit=report.commit or "",
            summary=(report.agent_summary or "").strip()[:300],
        )
        if report.passed:  # in the same atomic write: a pass survives a kill right after it
            run.progress.status = Status.PASSED
        run.state.write(run.progress)
        if run.progress.path is not None:  # the round's model calls, proof against a power cut
            save_spent(run.meter, spend_path(run.progress.path))
        save_progress(settings, run.progress)
    settings.events.emit(
        RoundEnd(
            round=report.round,
            passed=report.passed,
            outcome=report.outcome,
            usage=report.usage,
            duration=report.duration,
            cause=report.cause,
        )
    )


def keep_partial_work(run: Run, number: int) -> None:
    """A round cut short by a bound: commit what it left so nothing is lost (outside git, note
    that it was cut short: what it left is not a person's edit)."""
    if run.workspace.branch:
        run.workspace.commit_round(number, f"harness: round {number} (interrupted, not verified)")
    else:
        run_snapshots(run).note_cut_short(number)


def finish_run(settings: Settings, run: Run) -> RunResult:
    """Mark progress, merge or escalate, and give the result its named stop."""
    stop = run.stop or StopReason.ERROR
    escalation_path = None
    best = best_of(_earlier(run), run.reports)
    if run.progress is not None:
        if run.progress.path is not None:
            save_spent(run.meter, spend_path(run.progress.path))
        run.progress.status = Status.PASSED if stop is StopReason.PASSED else Status.ESCALATED
        save_progress(settings, run.progress)
    message, merged = run.message, False
    if stop is StopReason.PASSED:
        merged, landed = _land(settings, run)
        message += landed
    else:
        escalation_path = _escalate(settings, run, stop, best)
    settings.events.emit(StopEvent(reason=stop.value, message=message))
    result = RunResult(
        stop,
        message,
        run.reports,
        run.meter.usage,
        run.workspace.branch,
        run.workspace.path if run.workspace.branch else None,
        escalation_path,
        settings.run_id,
        run.first_round,
        run_warning(settings, run),
        run.cut_short,
        bad_configuration=run.bad_configuration,
        waited=run.meter.waited,
        unsandboxed=unsandboxed(settings),
        origin=run.origin,
        merged=merged,
        best_round=best.round if best is not None else None,
        best=best.describe() if best is not None else "",
    )
    if settings.on_finish is not None:  # it cannot change the verdict, only report
        result = dataclasses.replace(result, connectors=settings.on_finish(result))
    settings.events.emit(
        RunEnd(
            run_id=settings.run_id,
            stop_reason=stop.value,
            passed=result.passed,
            iterations=result.iterations,
            usage=result.usage,
            duration=run.meter.elapsed + run.meter.waited,
            waited=run.meter.waited,
        )
    )
    return result


def _land(settings: Settings, run: Run) -> tuple[bool, str]:
    """A pass: merge when asked, then remove the worktree (the branch stays) unless kept;
    whether the work was merged, and what the verdict's message adds."""
    merged, said = False, ""
    if settings.merge:
        try:
            run.workspace.merge_ff()
            merged, said = True, f"; merged into your branch ({run.origin})"
        except GitIsolationError as exc:
            said = f"; not merged, the work stays on its branch: {exc}"
    try:
        run.workspace.finish(prune=not settings.keep_worktree, park=True)
    except GitIsolationError as exc:
        said += f"; the worktree was left in place: {exc}"
    return merged, said


def _earlier(run: Run) -> list[Attempt]:
    """The rounds earlier sessions of this run recorded."""
    return run.progress.attempts[: run.first_round - 1] if run.progress else []


def _escalate(settings: Settings, run: Run, stop: StopReason, best: RoundMark | None) -> Path:
    where = run.progress.path if run.progress and run.progress.path else None
    path = settings.report_path(where, run.workspace.path)
    assert path is not None
    escalation = Escalation(
        settings.goal,
        stop,
        run.message,
        run.reports,
        run.meter.usage,
        run.workspace.branch,
        run.workspace.path if run.workspace.branch else None,
        where,
        earlier=tuple(_earlier(run)),
        unsandboxed=unsandboxed(settings),
        best=best_round_note(run, best),
        models=(*run.switches, *spent_lines(run.spent)) if run.ladder else (),
    )
    try:
        escalate(escalation, path, settings)
    except HarnessError as exc:  # the hook was refused; the report is written
        settings.events.emit(HookFailed(hook="on_escalate", error=f"{exc}"[:1000]))
    settings.events.emit(EscalationEvent(reason=stop.value, report_path=str(path)))
    return path
