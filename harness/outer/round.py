"""One round of the outer loop, played, recorded and decided: :func:`play_round`.

A round gathers its evidence (an author session, the agent's changes, the checks, a person's
answer where one is asked, a commit, the host's CI), makes its :class:`RoundReport` here and
nowhere else, records it, and asks :func:`~harness.outer.decision.decide` what comes next. What
it hands back is an immutable :class:`RoundOutcome`; the driver gives its decision to
:meth:`~harness.outer.run.Run.settle`, the one place a run's stop and feedback are set.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from harness.agent.agent import AgentRun
from harness.agent.ledger import Ledger
from harness.agent.session import TakesAsker, TakesTools
from harness.core.errors import BookkeepingError, ConfigError, HarnessError, Stopped
from harness.core.event_schema import ChecksStart, ModelSwitch, RoundStart
from harness.core.stop import StopReason
from harness.core.usage import Usage
from harness.memory.progress import Progress
from harness.models.base import ModelError
from harness.outer.cascade import switch_feedback, switch_reason
from harness.outer.change import round_change
from harness.outer.decision import Decision, RoundReport, commit_message, decide
from harness.outer.edits import describe_edits, keep_person_edits, person_edits
from harness.outer.options import ArtifactFile, CiRound
from harness.outer.people import (
    action_asker,
    ask_person,
    notify_round,
    person_asked,
    take_guidance,
)
from harness.outer.progress_tool import progress_tool
from harness.outer.records import keep_partial_work, record_round
from harness.outer.run import Run
from harness.outer.settings import Settings
from harness.outer.task import TaskInputs, render_task
from harness.sandbox import default_sandbox
from harness.verify.artifact import read_artifact
from harness.verify.base_results import measure_at_base
from harness.verify.gates import GateReport, SuiteGate
from harness.verify.pytest_runtime import base_blocker
from harness.verify.round import gate_event, verify
from harness.workspace.checkout import prefix_of
from harness.workspace.workspace import truncate_diff

CRITIC_DIFF_CHARS = 20_000
"""How much of the run's diff the critic reads; a longer diff is cut with a stated marker."""


@dataclass(frozen=True)
class RoundOutcome:
    """How round ``number`` ended: its report (None when it was cut short before one was made
    or kept) and what the loop does next."""

    number: int
    report: RoundReport | None
    decision: Decision
    bad_configuration: bool = False  # what stopped it is bad set-up found mid-run

    @property
    def cut_short(self) -> bool:
        return self.report is None


def play_round(settings: Settings, run: Run, number: int) -> RoundOutcome:
    """Round ``number``: played, recorded, decided. Whatever stops it part-way (a bound, an
    error, Ctrl-C) is a named stop, its partial work kept."""
    try:
        report, draft = _play(settings, run, number)
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - every stop gets a name
        stop, message = _stop_for(exc, number)
        try:
            keep_partial_work(run, number)
        except BookkeepingError as kept:  # the stop stands; what was not kept is said
            message += f"; its partial work was not kept: {kept}"
        decision = Decision(stop, message)
        return RoundOutcome(number, None, decision, bad_configuration=isinstance(exc, ConfigError))
    run.reports.append(report)
    try:
        record_round(settings, run, report, draft)
    except (BookkeepingError, OSError) as exc:  # a record the harness cannot keep: no pass
        unkept = Decision(StopReason.ERROR, f"round {number} could not be recorded: {exc}")
        return RoundOutcome(number, report, unkept)
    notify_round(settings, report)
    decision = decide(
        run.reports, max_iterations=settings.max_iterations, patience=settings.patience
    )
    return RoundOutcome(number, report, decision)


def _play(settings: Settings, run: Run, number: int) -> tuple[RoundReport, Progress | None]:
    """The round's evidence, in its report; the progress the agent edited (kept if the round is
    recorded)."""
    started = time.monotonic()
    run.meter.check_time()
    switched = _climb(settings, run, number)
    playing = (run.ladder[run.rung], *run.models[1:]) if run.ladder else run.models
    for model in {id(m.inner): m for m in playing}.values():
        model.begin_round(number)
    usage_before = run.meter.usage
    edits = person_edits(run, number)
    progress = run.progress and run.progress.model_copy()  # this round's notes are its guidance
    task = render_task(
        TaskInputs(
            goal=settings.goal,
            round=number,
            max_iterations=settings.max_iterations,
            budget=run.meter.describe_remaining(),
            skill=settings.skill,
            progress=progress,
            feedback=switched + run.feedback,
            critic=run.critic is not None,
            protect=settings.protect,
            guidance=take_guidance(settings, run, number),
            edits=describe_edits(edits),
        )
    )
    settings.events.emit(
        RoundStart(
            round=number, max_iterations=settings.max_iterations, task=task, head=run.state.head
        )
    )
    author = run.author.model.name
    before_session = run.meter.usage
    try:
        session, draft = _session(settings, run, task, number)
    finally:  # what the author's model cost, by model (a cascade's report)
        run.spent[author] = run.spent.get(author, Usage()) + (run.meter.usage - before_session)
    restored = keep_person_edits(run.workspace.path, edits)
    settings.events.emit(
        ChecksStart(
            round=number, gates=[g.name for g in settings.gates], critic=run.critic is not None
        )
    )
    # The agent's work, taken once: protection, the critic's diff, the no-progress digest and
    # the tree the checks judge.
    delivery = run.workspace.delivery(settings.protect)
    changed, diff = delivery.changed, delivery.diff
    if run.baselines is None:  # kept per base, else measured once
        measure_base(settings, run)
    root, base = run.workspace.root, run.workspace.base_commit
    change = None  # the round's change against the base, for the gates that judge it (in git)
    if root is not None and base is not None:
        change = round_change(root, run.workspace.path, base=base, changed=changed)
    # The checks judge what the round commit holds, never the agent's working folder.
    with run.workspace.clean_checkout(settings.protect, tree=delivery.tree) as delivered:
        evidence = verify(
            round_number=number,
            goal=settings.goal,
            workspace=delivered,
            changed=changed,
            protect=settings.protect,
            gates=settings.gates,
            critic=run.critic,
            artifact=lambda: _artifact(settings, run, delivered, session, diff),
            events=settings.events,
            criteria=settings.skill_criteria(),
            read_base=run.workspace.file_at_base,
            baselines=run.baselines,
            change=change,
        )
    checked = RoundReport(
        round=number,
        agent_stop=session.stop_reason,
        agent_message=session.stop_message,
        agent_summary=session.final,
        steps=session.steps,
        gates=evidence.gates,
        verdict=evidence.verdict,
        usage=run.meter.usage - usage_before,
        duration=time.monotonic() - started,
        protected_violations=evidence.violations,
        diff_digest=hashlib.sha256(diff.encode()).hexdigest() if diff else None,
        critic_required=run.critic is not None,
        files_changed=changed,
        restored_edits=restored,
        approval_required=person_asked(settings, run, evidence.verdict) is not None,
    )
    judged = dataclasses.replace(checked, approval=ask_person(settings, run, checked))
    commit = run.workspace.commit_round(number, commit_message(judged))
    ci = _wait_for_ci(settings, run, judged, commit)
    return dataclasses.replace(judged, commit=commit, gates=(*judged.gates, *ci)), draft


def _climb(settings: Settings, run: Run, number: int) -> str:
    """With a cascade, the author moves to the model round ``number`` is due to run on; what
    that round is told about the move ("" when the model stays)."""
    cascade = settings.cascade
    if cascade is None or cascade.rung(number) == run.rung:
        return ""
    previous, model = run.ladder[run.rung], run.ladder[cascade.rung(number)]
    outcomes = {r.round: r.outcome for r in run.reports}
    played = range(cascade.first_round(run.rung), number)
    reason = switch_reason(previous.name, [(n, outcomes.get(n)) for n in played])
    spent = run.spent.get(previous.name, Usage()).cost_usd
    settings.events.emit(ModelSwitch(round=number, previous=previous.name, model=model.name,
                                     reason=reason, spent_usd=spent))  # fmt: skip
    run.switches.append(f"round {number}: {previous.name} -> {model.name}: {reason}")
    run.rung = cascade.rung(number)
    run.author = settings.agent.with_model(model)
    return switch_feedback(previous.name, model.name, reason)


def _stop_for(exc: BaseException, number: int) -> tuple[StopReason, str]:
    """The named stop for what ended round ``number`` early."""
    if isinstance(exc, Stopped):
        return exc.reason, exc.message
    if isinstance(exc, KeyboardInterrupt):
        return StopReason.CANCELLED, f"cancelled during round {number}"
    if isinstance(exc, ModelError):  # the model's name and the provider's error say it all
        return StopReason.ERROR, f"round {number} failed: model error: {exc}"
    message = f"round {number} failed: {type(exc).__name__}: {exc}"
    if not isinstance(exc, HarnessError):  # a bug, not a named failure: keep where it happened
        trace = "".join(traceback.format_exception(exc)[-3:])
        message += f"\n{trace.rstrip()}"
    return StopReason.ERROR, message


def _wait_for_ci(
    settings: Settings, run: Run, report: RoundReport, commit: str | None
) -> tuple[GateReport, ...]:
    """A round that passed: with ``ci``, its commit is published and the host's checks on it
    are one more gate (``ci``); a failed check's log is the next round's input."""
    wait, branch = settings.ci, run.workspace.branch
    head = commit or run.state.head
    if wait is None or not report.passed or branch is None or head is None:
        return ()
    gate = wait(CiRound(report.round, head, branch, run.workspace.path, run.origin,
                        run.meter.remaining_seconds()))  # fmt: skip
    settings.events.emit(gate_event(report.round, gate))
    return (gate,)


def _session(
    settings: Settings, run: Run, task: str, number: int
) -> tuple[AgentRun, Progress | None]:
    """The author's session, and the draft of progress it edits (kept only if the round ends)."""
    skill = settings.skill
    ledger = Ledger(
        settings.goal,
        rules=skill.rules if skill else (),
        open_items=[i.text for i in run.progress.checklist if not i.done] if run.progress else (),
    )
    author = run.author
    if isinstance(author, TakesAsker):
        author = author.with_asker(action_asker(settings, run, number))
    draft = None
    if run.progress is not None:
        draft = run.progress.model_copy(deep=True)
        if isinstance(author, TakesTools):  # else the harness alone keeps the checklist
            author = author.with_tools([progress_tool(draft)])
    session = author.run(
        task, run.workspace.path, ledger=ledger, protect=settings.protect, events=settings.events
    )
    if session.interruption is not None:
        raise session.interruption
    return session, draft


def measure_base(settings: Settings, run: Run) -> str | None:
    """Measure the pytest gates at the base commit (into ``run.baselines``); why one of them
    cannot even run there (a dependency missing from the environment), or None."""
    workspace = run.workspace
    run.baselines = {}
    if (
        workspace.root is None
        or workspace.base_commit is None
        or not any(isinstance(gate, SuiteGate) for gate in settings.gates)
    ):
        return None
    run.baselines = measure_at_base(
        settings.gates,
        base=workspace.base_commit,
        folder=prefix_of(workspace.root, workspace.path),
        checkout=lambda: workspace.clean_checkout((), at_base=True),
    )
    if not any(report.problems for report in run.baselines.values()):
        return None
    with workspace.clean_checkout((), at_base=True) as base:  # what the project holds
        python = (settings.agent.sandbox or default_sandbox()).python
        found = (base_blocker(report, base, python) for report in run.baselines.values())
        return next((problem for problem in found if problem), None)


def _artifact(settings: Settings, run: Run, delivered: Path, session: AgentRun, diff: str) -> str:
    """What the critic judges: a named file as delivered, the diff (bounded), or the session's
    last answer."""
    artifact = settings.critic_artifact
    if isinstance(artifact, ArtifactFile):
        return read_artifact(delivered, artifact.path)
    if artifact == "diff" and run.workspace.base_commit:
        return truncate_diff(diff, CRITIC_DIFF_CHARS)
    return session.final or ""
