"""One ``OuterLoop.run`` in progress: its workspace, meter, metered models and rounds so far."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harness.agent.session import Session
from harness.core.atomic import atomic_write_text
from harness.core.stop import StopReason
from harness.core.usage import Usage
from harness.memory.progress import Progress
from harness.memory.progress_terms import Status
from harness.memory.run_state import RunState
from harness.memory.spend import Spent, read_spent, spend_path, write_spent
from harness.models.budget import Meter, MeteredModel
from harness.outer.decision import Decision, RoundReport
from harness.outer.settings import Settings
from harness.sandbox import default_sandbox
from harness.verify.junit import JUnitReport
from harness.verify.panel import Reviewer
from harness.workspace.git import Workspace, open_workspace


@dataclass
class Run:
    """State of one run in progress. Its stop, message and the next round's feedback are set in
    one place, :meth:`settle`, from a decision."""

    workspace: Workspace
    meter: Meter
    author: Session
    critic: Reviewer | None
    progress: Progress | None
    state: RunState
    first_round: int
    models: tuple[MeteredModel, ...]  # the author's first model and the critics'
    reports: list[RoundReport] = field(default_factory=list)
    stop: StopReason | None = None
    cut_short: int | None = None  # the round stopped part-way, if one was
    bad_configuration: bool = False  # what stopped it is bad set-up found mid-run (a ConfigError)
    message: str = ""
    feedback: str = ""
    baselines: dict[str, JUnitReport] | None = None  # the pytest gates at the base, once measured
    ladder: tuple[MeteredModel, ...] = ()  # a cascade's models, metered; () without one
    rung: int = 0  # the index in ``ladder`` of the model the author runs on
    spent: dict[str, Usage] = field(default_factory=dict)  # the author's calls, by model
    switches: list[str] = field(default_factory=list)  # each move up the ladder, said

    def settle(
        self, decision: Decision, *, cut_short: int | None = None, bad_configuration: bool = False
    ) -> None:
        """Take ``decision``: a stop ends the run with its message (``cut_short``: the round it
        stopped part-way; ``bad_configuration``: caused by bad set-up); else its message is the
        next round's feedback."""
        if decision.stop is None:
            self.feedback = decision.message
            return
        self.stop, self.message = decision.stop, decision.message
        self.cut_short, self.bad_configuration = cut_short, bad_configuration

    @property
    def origin(self) -> str | None:
        """The name of the branch the run started from (``main``), None when HEAD was detached."""
        origin = self.workspace.origin
        return origin.removeprefix("refs/heads/") if origin else None


def start_run(settings: Settings, progress: Progress | None) -> Run:
    """Open the workspace (resuming the recorded branch), meter the models, mark progress begun."""
    state = RunState.read(progress) if progress is not None else RunState()
    begun = progress is not None and progress.status is not Status.NOT_STARTED
    resume_branch = state.branch if begun else None
    workspace = open_workspace(
        settings.workspace,
        isolation=settings.isolation,
        loop_name=settings.name,
        run_id=settings.run_id,
        resume_branch=resume_branch,
        own_files=own_files(progress.path if progress is not None else None),
        loop_key=progress.path if progress is not None and progress.path else settings.workspace,
        start=settings.start,
        park=settings.park,
    )
    if resume_branch:
        workspace.clear_stale_locks()  # a killed run may have died inside a git command
        if state.head:
            workspace.reset_to(state.head)  # a round cut off mid-way is discarded and redone
    if begun and progress is not None and settings.on_resume is not None:
        settings.on_resume(state, progress.iteration)  # before the state is rewritten
    meter = _meter(settings, progress)
    author_model = MeteredModel(
        settings.agent.model,
        meter,
        role="author",
        events=settings.events,
        redact=settings.redact,
    )
    ladder = (
        (author_model, *(author_model.for_role("author", m) for m in settings.cascade.models[1:]))
        if settings.cascade is not None
        else ()
    )
    first = progress.iteration + 1 if progress is not None and begun else 1
    rung = settings.cascade.rung(first) if settings.cascade is not None else 0
    author = settings.agent.with_model(ladder[rung] if ladder else author_model)
    models = [author_model]
    critic = None
    if settings.critic is not None:
        critic_models = [author_model.for_role("critic", m) for m in settings.critic.models]
        critic = settings.critic.with_models(critic_models, settings.events)
        models += critic_models
    if progress is not None:
        if not begun:
            progress.iteration = 0
            for item in settings.checklist:
                progress.add_item(item)
        progress.status = Status.IN_PROGRESS
        progress.max_iterations = settings.max_iterations
        state = RunState(
            branch=workspace.branch,
            worktree=str(workspace.path) if workspace.branch else None,
            base=workspace.base_commit,
            head=state.head or workspace.base_commit,
            pins=settings.pins or state.pins,
            restored=state.restored,  # the branch holds it until a round is played
        )
        state.write(progress)
        save_progress(settings, progress)
    return Run(workspace, meter, author, critic, progress, state, first, tuple(models),
               ladder=ladder, rung=rung)  # fmt: skip


def _meter(settings: Settings, progress: Progress | None) -> Meter:
    """The run's meter, starting from what earlier processes of this loop spent."""
    if progress is None or progress.path is None:
        return Meter(settings.budget)
    path = spend_path(progress.path)
    spent = read_spent(path)
    return Meter(
        settings.budget,
        prior=spent.usage,
        prior_seconds=spent.seconds,
        on_record=lambda meter: save_spent(meter, path, durable=False),
    )


def save_spent(meter: Meter, path: Path, *, durable: bool = True) -> None:
    """Record everything ``meter`` has counted, earlier processes included: after each model
    call without fsync, durably at each round's end and the run's (see
    :mod:`harness.memory.spend` for what survives which crash)."""
    write_spent(path, Spent.of(meter.total, meter.prior_seconds + meter.elapsed), durable=durable)


def save_progress(settings: Settings, progress: Progress) -> None:
    """progress.md, atomically and with secrets redacted."""
    assert progress.path is not None
    atomic_write_text(progress.path, settings.redact(progress.render()))


def run_warning(settings: Settings, run: Run) -> str | None:
    """What the run says once: about its workspace, and when commands are not sandboxed."""
    found = [w for w in (run.workspace.warning, unsandboxed(settings)) if w]
    return "; ".join(found) or None


def unsandboxed(settings: Settings) -> str | None:
    """Why the agent's commands are not sandboxed (backend ``none``, or bwrap failed), or None:
    said in every output and report of the run."""
    return (settings.agent.sandbox or default_sandbox()).warning


def own_files(path: Path | None) -> tuple[Path, ...]:
    """What the harness keeps beside the progress file at ``path``: not the user's changes."""
    if path is None:
        return ()
    return (
        path,
        previous_name(path),  # set aside by a restart
        path.with_suffix(".escalation.md"),
        path.with_name(path.name + ".lock"),
        spend_path(path),
        previous_name(spend_path(path)),
    )


def previous_name(path: Path) -> Path:
    """``draft.md`` → ``draft.previous.md``: where a restart sets a file aside."""
    return path.with_name(f"{path.stem}.previous{path.suffix}")
