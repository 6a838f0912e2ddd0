"""The outer loop: run the agent round after round until the gates and the critic pass.

:class:`OuterLoop` is a thin driver. Each round gathers evidence (an agent session, the gates,
the critic, a commit) into a :class:`~harness.outer.rounds.RoundReport`; the pure
:func:`~harness.outer.rounds.decide` says whether to pass, stop or feed the failure back. Rounds are
driven by the general :class:`~harness.engine.loop.Loop` engine, progress is saved atomically after
every round, and any stop that is not a pass escalates to a person.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import time
import traceback
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from harness.agent.agent import Agent, AgentRun
from harness.agent.ledger import Ledger
from harness.core.atomic import atomic_write_text
from harness.core.errors import ConfigError, HarnessError, Stopped
from harness.core.redact import Redactor
from harness.core.sink import NULL_SINK, EventSink
from harness.core.stop import StopReason
from harness.core.usage import Usage
from harness.engine.loop import Loop, LoopContext, check_max_iterations, finish_message
from harness.memory.lock import LoopLock
from harness.memory.progress import Progress
from harness.memory.progress_items import Status
from harness.memory.run_state import RunState
from harness.memory.skill import Skill
from harness.models.budget import Budget, Meter, MeteredModel
from harness.outer.escalation import Escalation, EscalationHook, escalate
from harness.outer.progress_tool import progress_tool
from harness.outer.result import RunResult
from harness.outer.rounds import RoundReport, commit_message, decide, gate_summary
from harness.outer.task import TaskInputs, render_task
from harness.sandbox import default_sandbox
from harness.tools import Toolbox
from harness.tools.paths import check_protect_patterns
from harness.verify.critic import Critic
from harness.verify.gates import Gate
from harness.verify.round import default_protect, verify
from harness.workspace.git import GitIsolationError, Isolation, Workspace, open_workspace
from harness.workspace.workspace import truncate_diff


@dataclass
class _Run:
    """Mutable state of one ``OuterLoop.run``."""

    workspace: Workspace
    meter: Meter
    author: Agent
    critic: Critic | None
    progress: Progress | None
    state: RunState
    first_round: int
    models: tuple[MeteredModel, ...]
    reports: list[RoundReport] = field(default_factory=list)
    stop: StopReason | None = None
    message: str = ""
    feedback: str = ""
    draft: Progress | None = (
        None  # the round's progress as the agent edits it; kept if it completes
    )


CRITIC_DIFF_CHARS = 20_000
"""How much of the run's diff the critic reads; a longer diff is cut with a stated marker."""


class OuterLoop:
    """Keep ``agent`` working on ``goal`` until ``gates`` and ``critic`` pass, within bounds."""

    def __init__(
        self,
        goal: str,
        agent: Agent,
        *,
        gates: Sequence[Gate] = (),
        critic: Critic | None = None,
        skill: Skill | str | Path | None = None,
        progress: Progress | str | Path | None = None,
        max_iterations: int = 10,
        budget: Budget | None = None,
        workspace: str | Path = ".",
        isolation: Isolation | Literal["auto"] = "auto",
        on_escalate: EscalationHook | None = None,
        protect: Sequence[str] | None = None,
        patience: int = 3,
        rollback: str = "keep",
        merge: bool = False,
        name: str = "loop",
        events: EventSink = NULL_SINK,
        critic_artifact: str = "diff",
        run_id: str | None = None,
        redact: Callable[[str], str] | None = None,
        checklist: Sequence[str] = (),
        restart: bool = False,
    ) -> None:
        if not goal or not goal.strip():
            raise ConfigError("goal: must not be empty")
        check_max_iterations(max_iterations)
        if rollback not in ("keep", "failed"):
            raise ConfigError(f"rollback: must be 'keep' or 'failed', got {rollback!r}")
        if critic_artifact not in ("diff", "final") and not critic_artifact.startswith("file:"):
            raise ConfigError(
                f"critic_artifact: must be 'diff', 'final' or 'file:PATH', got {critic_artifact!r}"
            )
        if not isinstance(patience, int) or not 2 <= patience <= 100:
            raise ConfigError(f"patience: must be an integer from 2 to 100, got {patience!r}")
        if not gates and critic is None:
            raise ConfigError(
                "gates/critic: give at least one gate or a critic; nothing else can pass a round"
            )
        self.goal = goal.strip()
        self.agent = agent
        self.gates = tuple(gates)
        self.critic = critic
        self.skill = Skill.load(skill) if isinstance(skill, str | Path) else skill
        self.progress = _load_progress(progress, name, self.goal, fresh=restart)
        self._progress_from_file = progress is not None and not isinstance(progress, Progress)
        self.max_iterations = max_iterations
        self.budget = budget or Budget()
        self.workspace = Path(workspace)
        self.isolation = isolation
        self.on_escalate = on_escalate
        self.protect = (
            check_protect_patterns(protect) if protect is not None else default_protect(self.gates)
        )
        self.patience = patience
        self.rollback = rollback
        self.merge = merge
        self.name = name
        self.events = events
        self.critic_artifact = critic_artifact
        self.run_id = run_id or uuid.uuid4().hex[:8]
        self.redact = redact or Redactor().redact_text
        self.checklist = tuple(checklist)
        self.restart = restart

    # --- the driver -------------------------------------------------------------------------

    def run(self) -> RunResult:
        """Play rounds until a pass or a bound; escalate any other stop."""
        if self.progress is None or self.progress.path is None:
            return self._run()
        path = self.progress.path
        with LoopLock(path):
            # Read (or set aside) progress.md only now: another process may have moved it on.
            if self.restart:
                if path.exists():
                    path.replace(path.with_suffix(".previous.md"))
                self.progress = Progress(name=self.name, goal=self.goal, path=path)
            elif self._progress_from_file and path.exists():
                self.progress = Progress.load(path)
            return self._run()

    def _warning(self, run: _Run) -> str | None:
        """What the run says once: about its workspace, and when commands are not sandboxed."""
        sandbox = (self.agent.sandbox or default_sandbox()).warning
        found = [w for w in (run.workspace.warning, sandbox) if w]
        return "; ".join(found) or None

    def _run(self) -> RunResult:
        if self.progress is not None and self.progress.status is Status.PASSED:
            return RunResult(
                StopReason.PASSED,
                "already passed; restart to run again",
                [],
                Usage(),
                first_round=self.progress.iteration + 1,
                run_id=self.run_id,
            )
        if (
            self.progress is not None
            and self.progress.status is Status.ESCALATED
            and self.progress.iteration >= self.max_iterations
        ):
            report = self._report_path(self.progress.path, None)
            return RunResult(
                StopReason.MAX_ITERATIONS,
                f"already escalated after round {self.progress.iteration} of "
                f"{self.max_iterations}; raise max_iterations or restart to run again",
                [],
                Usage(),
                escalation=report if report is not None and report.exists() else None,
                first_round=self.progress.iteration + 1,
                run_id=self.run_id,
            )
        run = self._start()
        self.events.emit(
            "run_start",
            run_id=self.run_id,
            goal=self.goal,
            loop_name=self.name,
            model=self.agent.model.name,
            critic_model=self.critic.model.name if self.critic else None,
            max_iterations=self.max_iterations,
            budget=self.budget.__dict__,
            workspace=str(run.workspace.path),
            branch=run.workspace.branch,
            warning=self._warning(run),
        )
        remaining = self.max_iterations - run.first_round + 1
        if remaining < 1:
            run.stop, run.message = (
                StopReason.MAX_ITERATIONS,
                finish_message(run.first_round - 1, StopReason.MAX_ITERATIONS),
            )
        else:
            Loop(lambda ctx: self._round(run, ctx), max_iterations=remaining).run()
        return self._finish(run)

    def _start(self) -> _Run:
        progress = self.progress
        state = RunState.read(progress) if progress is not None else RunState()
        resume_branch = (
            state.branch if progress and progress.status is not Status.NOT_STARTED else None
        )
        workspace = open_workspace(
            self.workspace,
            isolation=self.isolation,
            loop_name=self.name,
            run_id=self.run_id,
            resume_branch=resume_branch,
        )
        if resume_branch:
            workspace.clear_stale_locks()  # a killed run may have died inside a git command
            if state.head:
                workspace.reset_to(state.head)  # a round cut off mid-way is discarded and redone
        meter = Meter(self.budget)
        author = copy.copy(self.agent)
        author_model = MeteredModel(self.agent.model, meter, role="author", events=self.events)
        author.model = author_model
        models = [author_model]
        critic = None
        if self.critic is not None:
            critic = copy.copy(self.critic)
            critic.model = author_model.for_role("critic", self.critic.model)
            critic.events = self.events
            models.append(critic.model)
        first = (
            progress.iteration + 1 if progress and progress.status is not Status.NOT_STARTED else 1
        )
        if progress is not None:
            if progress.status is Status.NOT_STARTED:
                progress.iteration = 0
                for item in self.checklist:
                    progress.add_item(item)
            progress.status = Status.IN_PROGRESS
            progress.max_iterations = self.max_iterations
            state = RunState(
                branch=workspace.branch,
                worktree=str(workspace.path) if workspace.branch else None,
                base=workspace.base_commit,
                head=state.head or workspace.base_commit,
            )
            state.write(progress)
            self._save(progress)
        return _Run(
            workspace,
            meter,
            author,
            critic,
            progress,
            state,
            first,
            tuple(models),
        )

    def _round(self, run: _Run, ctx: LoopContext) -> RoundReport | None:
        number = run.first_round + len(run.reports)
        try:
            report = self._play_round(run, number)
        except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - every stop gets a name
            run.stop, run.message = _stop_for(exc, number)
            self._keep_partial_work(run, number)
            ctx.exit(run.message)
            return None
        run.reports.append(report)
        self._record(run, report)
        decision = decide(run.reports, max_iterations=self.max_iterations, patience=self.patience)
        if decision.stop is not None:
            run.stop, run.message = decision.stop, decision.message
            ctx.exit(decision.message)
        else:
            run.feedback = decision.message
        return report

    def _play_round(self, run: _Run, number: int) -> RoundReport:
        started = time.monotonic()
        run.meter.check_time()
        for model in {id(m.inner): m for m in run.models}.values():
            model.begin_round(number)
        usage_before = run.meter.usage
        task = render_task(
            TaskInputs(
                goal=self.goal,
                round=number,
                max_iterations=self.max_iterations,
                budget=run.meter.describe_remaining(),
                skill=self.skill,
                progress=run.progress,
                feedback=run.feedback,
                critic=run.critic is not None,
                protect=self.protect,
            )
        )
        self.events.emit("round_start", round=number, max_iterations=self.max_iterations, task=task)
        ledger = Ledger(
            self.goal,
            rules=self.skill.rules if self.skill else (),
            open_items=[i.text for i in run.progress.checklist if not i.done]
            if run.progress
            else (),
        )
        author = run.author
        if run.progress is not None:
            # The agent edits a draft: a session cut off mid-way leaves progress.md untouched.
            run.draft = run.progress.model_copy(deep=True)
            author = copy.copy(run.author)
            author.toolbox = Toolbox([*self.agent.toolbox, progress_tool(run.draft)])
        session = author.run(
            task, run.workspace.path, ledger=ledger, protect=self.protect, events=self.events
        )
        if session.interruption is not None:
            raise session.interruption
        # The agent's work, taken once: protection, the critic's diff and the no-progress digest.
        changed_files, diff = run.workspace.changes()
        changed = tuple(changed_files)
        evidence = verify(
            round_number=number,
            goal=self.goal,
            workspace=run.workspace.path,
            changed=changed,
            protect=self.protect,
            gates=self.gates,
            critic=run.critic,
            artifact=lambda: self._artifact(run, session, diff),
            events=self.events,
            criteria=self._skill_criteria(),
        )
        report = RoundReport(
            round=number,
            agent_stop=session.stop_reason,
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
        )
        commit = run.workspace.commit_round(number, commit_message(report))
        return dataclasses.replace(report, commit=commit)

    def _skill_criteria(self) -> str | None:
        """SKILL.md's success criteria, rubric and rules, unless the critic was given its own."""
        if self.skill is None or self.critic is None or self.critic.criteria_given:
            return None
        return self.skill.render_for_critic()

    def _artifact(self, run: _Run, session: AgentRun, diff: str) -> str:
        if self.critic_artifact.startswith("file:"):
            target = run.workspace.path / self.critic_artifact.removeprefix("file:")
            return target.read_text(encoding="utf-8") if target.is_file() else ""
        if self.critic_artifact == "diff" and run.workspace.base_commit:
            return truncate_diff(diff, CRITIC_DIFF_CHARS)
        return session.final or ""

    def _record(self, run: _Run, report: RoundReport) -> None:
        """Save the round for good: progress.md (atomic), then the event."""
        head = report.commit or run.state.head
        if self.rollback == "failed" and not report.passed and run.workspace.branch:
            head = run.state.head or run.workspace.base_commit
            if head is not None:
                run.workspace.reset_to(head)
        run.state = dataclasses.replace(run.state, head=head)
        if run.progress is not None:
            if run.draft is not None:
                run.progress.checklist = run.draft.checklist
                run.progress.resume_point = run.draft.resume_point
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
            self._save(run.progress)
        self.events.emit(
            "round_end",
            round=report.round,
            passed=report.passed,
            outcome=report.outcome,
            usage=report.usage,
            duration=report.duration,
        )

    def _keep_partial_work(self, run: _Run, number: int) -> None:
        """A round cut short by a bound: commit what it left so nothing is lost."""
        if run.workspace.branch:
            run.workspace.commit_round(
                number, f"harness: round {number} (interrupted, not verified)"
            )

    def _finish(self, run: _Run) -> RunResult:
        stop = run.stop or StopReason.ERROR
        escalation_path = None
        if run.progress is not None:
            run.progress.status = Status.PASSED if stop is StopReason.PASSED else Status.ESCALATED
            self._save(run.progress)
        if stop is StopReason.PASSED:
            if self.merge:
                try:
                    run.workspace.merge_ff()
                    run.message += f"; merged into your branch ({run.workspace.branch})"
                except GitIsolationError as exc:
                    run.message += f"; not merged, the work stays on its branch: {exc}"
            try:
                run.workspace.finish(prune=True)
            except GitIsolationError as exc:
                run.message += f"; the worktree was left in place: {exc}"
        else:
            escalation_path = self._escalate(run, stop)
        self.events.emit("stop", reason=stop.value, message=run.message)
        result = RunResult(
            stop,
            run.message,
            run.reports,
            run.meter.usage,
            run.workspace.branch,
            run.workspace.path if run.workspace.branch else None,
            escalation_path,
            self.run_id,
            run.first_round,
            self._warning(run),
        )
        self.events.emit(
            "run_end",
            run_id=self.run_id,
            stop_reason=stop.value,
            passed=result.passed,
            iterations=result.iterations,
            usage=result.usage,
            duration=run.meter.elapsed,
        )
        return result

    def _report_path(self, progress_path: Path | None, workspace: Path | None) -> Path | None:
        """Where the escalation report goes: beside progress.md, else in the workspace."""
        if progress_path is not None:
            return progress_path.with_suffix(".escalation.md")
        return None if workspace is None else workspace / ".harness" / f"{self.name}.escalation.md"

    def _escalate(self, run: _Run, stop: StopReason) -> Path:
        where = run.progress.path if run.progress and run.progress.path else None
        path = self._report_path(where, run.workspace.path)
        assert path is not None
        earlier = run.progress.attempts[: run.first_round - 1] if run.progress else []
        escalate(
            Escalation(
                self.goal,
                stop,
                run.message,
                run.reports,
                run.meter.usage,
                run.workspace.branch,
                run.workspace.path if run.workspace.branch else None,
                where,
                earlier=tuple(earlier),
            ),
            path,
            hook=self.on_escalate,
            redact=self.redact,
        )
        self.events.emit("escalation", reason=stop.value, report_path=str(path))
        return path

    def _save(self, progress: Progress) -> None:
        """progress.md, atomically and with secrets redacted."""
        assert progress.path is not None
        atomic_write_text(progress.path, self.redact(progress.render()))


def _load_progress(
    progress: Progress | str | Path | None, name: str, goal: str, *, fresh: bool
) -> Progress | None:
    if progress is None or isinstance(progress, Progress):
        return progress
    if fresh:  # a restart: the old file is set aside under the lock, never parsed
        return Progress(name=name, goal=goal, path=Path(progress))
    return Progress.load_or_create(progress, name=name, goal=goal)


def _stop_for(exc: BaseException, number: int) -> tuple[StopReason, str]:
    """The named stop for what ended round ``number`` early."""
    if isinstance(exc, Stopped):
        return exc.reason, exc.message
    if isinstance(exc, KeyboardInterrupt):
        return StopReason.CANCELLED, f"cancelled during round {number}"
    message = f"round {number} failed: {type(exc).__name__}: {exc}"
    if not isinstance(exc, HarnessError):  # a bug, not a named failure: keep where it happened
        trace = "".join(traceback.format_exception(exc)[-3:])
        message += f"\n{trace.rstrip()}"
    return StopReason.ERROR, message
