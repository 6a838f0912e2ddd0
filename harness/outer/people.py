"""What a person sees and says while a loop runs: approvals, queued notes, round notifications.

* A :class:`~harness.verify.human.HumanGate` is asked only after the automatic gates and the
  critic passed a round; its answer is part of the round's report. The time budget stands still
  while it waits.
* Notes queued with ``harness note`` are taken when a round starts: the round's task shows them
  and progress.md's Notes section records them.
* The ``on_round`` hook (a callable given the :class:`RoundReport`, or a shell command given
  the round as JSON in ``HARNESS_ROUND_REPORT``, run inside the loop's hook sandbox, in an
  empty folder of its own: :mod:`harness.outer.hooks`) runs after
  every recorded round; its failure is a ``hook_failed`` event, never a stop.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from harness.core.errors import HarnessError
from harness.core.event_schema import ApprovalEvent, HookFailed, NoteEvent
from harness.core.text import shown_name
from harness.memory.approval import ApprovalRequest
from harness.memory.inbox import Inbox
from harness.outer.decision import RoundReport
from harness.outer.hooks import run_hook
from harness.outer.run import Run, save_progress
from harness.outer.settings import Settings
from harness.verify.critic import Verdict
from harness.verify.human import Approval, HumanGate, Outcome, inbox_asker
from harness.verify.panel import CriticPanel, PanelVerdict, split_reason


def inbox_for(settings: Settings, run: Run) -> Inbox:
    """Beside progress.md; a loop without one keeps its inbox in the workspace's .harness/."""
    if run.progress is not None and run.progress.path is not None:
        return Inbox(run.progress.path)
    return Inbox(settings.workspace / ".harness" / f"{settings.name}.md")


def take_guidance(settings: Settings, run: Run, number: int) -> tuple[str, ...]:
    """The notes queued since the last round, recorded in progress.md before the round starts."""
    notes = inbox_for(settings, run).take_notes()
    if notes and run.progress is not None:
        lines = "\n".join(f"- Round {number}, from a person: {note}" for note in notes)
        run.progress.notes = f"{run.progress.notes.rstrip()}\n{lines}".strip()
        if run.progress.path is not None:
            save_progress(settings, run.progress)
    for note in notes:
        settings.events.emit(NoteEvent(round=number, text=note))
    return tuple(notes)


def action_asker(settings: Settings, run: Run, number: int) -> Callable[[str, float], Outcome]:
    """How round ``number``'s agent asks a person to allow an action: through the loop's inbox
    (``harness approve``), the time budget standing still while it waits."""
    ask = inbox_asker(inbox_for(settings, run), settings.name, number)

    def asker(question: str, timeout: float) -> Outcome:
        with run.meter.paused():
            return ask(question, timeout)

    return asker


def ask_person(settings: Settings, run: Run, report: RoundReport) -> Approval | None:
    """The person's answer on ``report``, when one is asked and everything else passed."""
    human = person_asked(settings, run, report.verdict)
    if human is None or not report.checks_passed:
        return None
    request = ApprovalRequest(
        loop=settings.name, round=report.round, summary=_summary(settings, report)
    )
    with run.meter.paused():  # a person's time is not the loop's time budget
        approval = human.review(request, inbox_for(settings, run))
    settings.events.emit(
        ApprovalEvent(
            round=report.round,
            outcome=approval.outcome,
            note=approval.note,
            waited=approval.waited,
        )
    )
    return approval


def person_asked(settings: Settings, run: Run, verdict: Verdict | None) -> HumanGate | None:
    """Who is asked about the round: the human gate, else the person a panel sends a round to
    when its critics split over it; None: no one."""
    if settings.human is not None:
        return settings.human
    panel = run.critic
    if isinstance(verdict, PanelVerdict) and verdict.split and isinstance(panel, CriticPanel):
        return panel.referee
    return None


def _summary(settings: Settings, report: RoundReport) -> str:
    lines = [f"Loop {settings.name}, round {report.round}: the gates and the critic passed."]
    files = report.files_changed
    shown = ", ".join(map(shown_name, files[:10]))
    shown += f" and {len(files) - 10} more" if len(files) > 10 else ""
    lines.append(f"Changed: {len(files)} file(s){': ' + shown if files else ''}")
    lines.extend(f"Gate {g.name}: {'passed' if g.passed else 'FAILED'}" for g in report.gates)
    if report.verdict is not None:
        reasons = "; ".join(report.verdict.reasons[:3])
        lines.append(f"Critic: {report.verdict.score:.1f}/10{' — ' + reasons if reasons else ''}")
        if isinstance(report.verdict, PanelVerdict) and report.verdict.split:
            lines.append(
                f"Critics split: {split_reason(report.verdict.members, report.verdict.spread)}"
            )
    if report.commit:
        lines.append(f"Commit: {report.commit}")
    lines.append(f"Report: harness report {settings.run_id}")
    return "\n".join(lines)


def notify_round(settings: Settings, report: RoundReport) -> None:
    """Run the ``on_round`` hook with the round's report; a failure is recorded, not raised."""
    hook = settings.on_round
    if hook is None:
        return
    try:
        if callable(hook):
            hook(report)
            return
        payload = json.dumps(round_payload(settings, report))
        env = {"HARNESS_ROUND_REPORT": payload, "HARNESS_LOOP": settings.name}
        result = run_hook(settings, hook, env=env)
        if result.exit_code != 0:
            raise HarnessError(f"exit code {result.exit_code}: {result.output[-500:]}")
    except Exception as exc:  # noqa: BLE001 - a notification must not stop the loop; recorded
        settings.events.emit(HookFailed(hook="on_round", round=report.round, error=f"{exc}"[:1000]))


def round_payload(settings: Settings, report: RoundReport) -> dict[str, object]:
    """The round as the hook reads it: plain JSON."""
    return {
        "loop": settings.name,
        "run_id": settings.run_id,
        "round": report.round,
        "passed": report.passed,
        "outcome": report.outcome,
        "gates": [{"name": g.name, "passed": g.passed, "summary": g.summary} for g in report.gates],
        "critic_score": report.verdict.score if report.verdict else None,
        "approval": report.approval.outcome if report.approval else None,
        "files_changed": list(report.files_changed),
        "commit": report.commit,
        "tokens": report.usage.total_tokens,
        "cost_usd": report.usage.cost_usd,
        "duration": round(report.duration, 3),
        "at": time.time(),
    }
