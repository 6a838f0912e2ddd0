"""The outer loop: run the agent round after round until the gates and the critic pass.

:class:`OuterLoop` is a thin driver. Each round (:func:`~harness.outer.round.play_round`)
gathers its evidence (an agent session, the gates, the critic, a commit) into a
:class:`~harness.outer.decision.RoundReport`, records it, and asks the pure
:func:`~harness.outer.decision.decide` whether to pass, stop or feed the failure back; the
round's immutable outcome is settled on the run in one place. :meth:`OuterLoop._play` reads top
to bottom; any stop that is not a pass escalates to a person.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from harness.agent.session import ChecksFit, Session, TakesTools
from harness.core.event_schema import RunStart
from harness.core.nofollow import UnsafePath, trusted_root
from harness.core.stop import StopReason
from harness.memory.lock import LoopLock
from harness.memory.progress import Progress
from harness.memory.progress_terms import Status
from harness.memory.run_state import RunState
from harness.models.base import Model
from harness.models.pricing import cost_budget_warning
from harness.models.scripted import ScriptedModel
from harness.models.wrapper import Wrapper
from harness.outer.claims import unconfirmed_pass
from harness.outer.decision import Decision, cap_message
from harness.outer.life_cycle import end_run, take_up
from harness.outer.options import LoopOptions
from harness.outer.records import finish_run
from harness.outer.result import RunResult
from harness.outer.round import measure_base, play_round
from harness.outer.run import run_warning, start_run
from harness.outer.settings import Settings
from harness.outer.task import TaskInputs, render_task
from harness.sandbox import default_sandbox
from harness.sandbox.engine import ENGINES
from harness.tools.mcp import mcp_tools
from harness.verify.gates import SuiteGate
from harness.workspace.checkout import prefix_of


class OuterLoop:
    """Keep ``agent`` working on ``goal`` until ``gates`` and ``critic`` pass, within bounds.

    Its keywords are the fields of :class:`~harness.outer.settings.Settings` (``gates``,
    ``critic``, ``max_iterations``, ``budget``, ``workspace``, the loop's name, protected paths,
    patience, rollback, bookkeeping and hooks: docs/outer-loop.md), checked together into one
    frozen object, ``self.settings``, that its parts read; ``progress`` is where its state is kept.
    ``options=LoopOptions(...)``, the former spelling of those keywords, is kept for one release.
    Its ``mcp`` servers belong to the loop: started (inside the agent's sandbox) when it runs,
    their tools given to the agent beside its own, stopped when the run ends. The ``on_round`` and
    ``on_escalate`` commands run inside ``hook_sandbox`` (default: the agent's sandbox).

    ``agent`` is any :class:`~harness.agent.session.Session`: the harness's own
    :class:`~harness.agent.agent.Agent`, an external agent's runner (:mod:`harness.runners`), or
    an object of your own meeting the protocol (docs/agents.md).
    """

    def __init__(
        self,
        goal: str,
        agent: Session,
        *,
        progress: Progress | str | Path | None = None,
        options: LoopOptions | None = None,
        **settings: Any,
    ) -> None:
        if options is not None:
            said = "options=LoopOptions(...) is deprecated: give the options as keywords"
            warnings.warn(said, DeprecationWarning, stacklevel=2)
        self.settings = Settings(goal=goal, agent=agent, **{**(options or {}), **settings})
        self.progress = _load_progress(progress, self.settings)
        self._progress_from_file = progress is not None and not isinstance(progress, Progress)
        self._notes: list[str] = []  # what setting the earlier run aside did, said at the start

    def run(self) -> RunResult:
        """Play rounds until a pass or a bound; escalate any other stop. The run starts and ends
        as :mod:`harness.outer.life_cycle` says, whoever calls it.

        While it runs, no link is followed below the workspace to reach the harness's own files
        (:func:`~harness.core.nofollow.trusted_root`); a file of its own found behind one, or
        moved or replaced, stops the run with ``ERROR`` naming it (nothing is written through).
        """
        self._check_fits()  # a refused run leaves nothing behind, not even a lock file
        with trusted_root(self.settings.workspace):
            try:
                return self._locked_run()
            except UnsafePath as exc:
                return RunResult(StopReason.ERROR, exc.message, run_id=self.settings.run_id)

    def _locked_run(self) -> RunResult:
        if self.progress is None or self.progress.path is None:
            return self._run()
        with LoopLock(self.progress.path):
            self.settings, self.progress, self._notes = take_up(
                self.settings, self.progress, reload=self._progress_from_file
            )
            return end_run(self.settings, self.progress, self._run())

    def _start_notes(self) -> list[str]:
        """What the person should know as the run starts: a cost budget it cannot enforce, a
        critic grading its own author's work. A scripted model costs nothing and its verdicts
        are written out in advance, so neither is said of one."""
        settings = self.settings
        author = settings.agent.model
        critics = settings.critic.models if settings.critic else ()
        models = [model for model in (author, *critics) if not _scripted(model)]
        scripted = (
            f"the model is scripted ({author.name}): its replies were written in advance and "
            "nothing is sent to a provider; --model NAME runs a real one"
            if _scripted(author)
            else ""
        )
        notes = [scripted, *self._notes, cost_budget_warning(settings.budget, models)]
        sandbox = settings.agent.sandbox or default_sandbox()
        python_env = sandbox.python_env
        if python_env is not None:
            notes.append(
                f"commands run in the project's Python environment ({python_env.origin}): "
                f"{python_env.python}"
            )
        elif sandbox.backend not in ENGINES and any(
            isinstance(g, SuiteGate) for g in settings.gates
        ):
            notes.append(
                f"the tests run with the harness's own Python, {sandbox.python}: no project "
                "environment was found (an active VIRTUAL_ENV, a .venv or venv; see [env])"
            )
        for critic in critics:
            if critic.name == author.name and not _scripted(author):
                notes.append(
                    f"the critic uses the author's model ({critic.name}); a model grading its "
                    "own work is lenient: name another in [critic] model (or --critic-model), "
                    "or set another provider's API key"
                )
        return [note for note in notes if note]

    def _check_fits(self) -> None:
        """A task too big for the model is refused before anything is created or moved."""
        settings = self.settings
        if not isinstance(settings.agent, ChecksFit):  # its prompt is not the harness's to count
            return
        first = TaskInputs(settings.goal, 1, settings.max_iterations, "", skill=settings.skill)
        settings.agent.check_fits(render_task(first))

    def _run(self) -> RunResult:
        done = self._already_done()
        if done is not None:
            return done
        sandbox = self.settings.agent.sandbox
        try:
            with self._servers():
                return self._play()
        finally:  # a container kept for the agent's commands ends with the run
            if sandbox is not None:
                sandbox.close()

    @contextmanager
    def _servers(self) -> Iterator[None]:
        """The run's MCP servers: their tools join the agent's while they run."""
        servers = self.settings.mcp
        if not servers:
            yield
            return
        agent = self.settings.agent
        assert isinstance(agent, TakesTools)  # checked when the loop was made
        with mcp_tools(servers, sandbox=agent.sandbox or default_sandbox()) as tools:
            self.settings = self.settings.model_copy(update={"agent": agent.with_tools(tools)})
            try:
                self._check_fits()  # the servers' tool schemas are part of every request
                yield
            finally:
                self.settings = self.settings.model_copy(update={"agent": agent})

    def _play(self) -> RunResult:
        settings = self.settings
        run = start_run(settings, self.progress)
        workspace = run.workspace
        settings.events.emit(
            RunStart(
                run_id=settings.run_id,
                goal=settings.goal,
                loop_name=settings.name,
                model=settings.agent.model.name,
                critic_model=(
                    ", ".join(m.name for m in settings.critic.models) if settings.critic else None
                ),
                max_iterations=settings.max_iterations,
                budget=settings.budget.__dict__,
                workspace=str(workspace.path),
                branch=workspace.branch,
                warning=run_warning(settings, run),
                notes=self._start_notes(),
                loop_file=settings.loop_file,
                repo_root=str(workspace.user_root or workspace.root or "") or None,
                folder=prefix_of(workspace.root, workspace.path) if workspace.root else "",
                base=workspace.base_commit,
                context_window=settings.agent.model.context_window,
            )
        )
        number = run.first_round
        try:
            blocker = measure_base(settings, run)  # before round 1: a gate that cannot even run
            if blocker is not None:
                run.settle(Decision(StopReason.ERROR, blocker), bad_configuration=True)
            while run.stop is None:  # each round: played, recorded, decided
                if number > settings.max_iterations:  # resumed at its cap: nothing left to play
                    run.settle(Decision(StopReason.MAX_ITERATIONS, cap_message(number - 1)))
                    break
                outcome = play_round(settings, run, number)
                run.settle(
                    outcome.decision,
                    cut_short=number if outcome.cut_short else None,
                    bad_configuration=outcome.bad_configuration,
                )
                number += 1
            return finish_run(settings, run)
        finally:
            run.workspace.close_checkout(park=True)  # the gates' folder, for the next run

    def _already_done(self) -> RunResult | None:
        """The result for a loop whose progress says it passed, or escalated at its cap."""
        progress, cap = self.progress, self.settings.max_iterations
        if progress is None:
            return None
        done = partial(RunResult, first_round=progress.iteration + 1, run_id=self.settings.run_id)
        if progress.status is Status.PASSED:
            doubt = unconfirmed_pass(self.settings, progress)
            if doubt is not None:
                return done(
                    StopReason.ERROR,
                    f"{doubt}: the pass is not trusted. Look at what happened, then run again "
                    'with --restart (earlier="restart") to start over',
                )
            return done(
                StopReason.PASSED,
                "already passed; restart to run again",
                branch=RunState.read(progress).branch,  # where the passed work is
            )
        if progress.status is Status.ESCALATED and progress.iteration >= cap:
            report = self.settings.report_path(progress.path, None)
            return done(
                StopReason.MAX_ITERATIONS,
                f"already escalated after round {progress.iteration} of {cap}; "
                "raise the cap (--max-iterations) or restart to run again",
                escalation=report if report is not None and report.exists() else None,
            )
        return None


def _load_progress(progress: Progress | str | Path | None, settings: Settings) -> Progress | None:
    if progress is None or isinstance(progress, Progress):
        return progress
    name, goal = settings.name, settings.goal
    if settings.earlier == "restart":  # the old file is set aside under the lock, never parsed
        return Progress(name=name, goal=goal, path=Path(progress))
    return Progress.load_or_create(progress, name=name, goal=goal)


def _scripted(model: Model) -> bool:
    """Whether ``model`` is (or wraps) a :class:`ScriptedModel`."""
    while isinstance(model, Wrapper):
        model = model.inner
    return isinstance(model, ScriptedModel)
