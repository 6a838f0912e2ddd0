"""``Settings``: everything one outer loop runs with, in one frozen object checked once.

It is the :class:`~harness.outer.options.LoopOptions` the loop was given (the loop's rules, and
what only a running process can give) with :class:`~harness.outer.loop.OuterLoop`'s own keywords
(goal, agent, gates, critic, skill, bounds, workspace), so the loop's parts read every setting
from one place: a setting added later is one field (of the options, or of the rules loop.toml
shares) and its use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import SkipValidation

from harness.agent.session import Session
from harness.core.budget import Budget
from harness.core.errors import ConfigError
from harness.engine.bounds import check_max_iterations
from harness.memory.skill import Skill
from harness.outer.escalation import EscalationHook
from harness.outer.options import LoopOptions, new_run_id
from harness.sandbox import Sandbox, default_sandbox
from harness.verify.gates import Gate
from harness.verify.human import HumanGate
from harness.verify.panel import Reviewer
from harness.verify.round import default_protect
from harness.workspace.git import Isolation


class Settings(LoopOptions):
    """One outer loop's settings: its options with :class:`~harness.outer.loop.OuterLoop`'s own
    keywords, one frozen object its parts share (made by :meth:`of`)."""

    goal: str
    protect: tuple[str, ...]  # the options' patterns, or (None given) the gates' test paths
    agent: SkipValidation[Session]
    gates: SkipValidation[tuple[Gate, ...]]
    human: SkipValidation[HumanGate | None]  # asked after the gates and the critic pass
    critic: SkipValidation[Reviewer | None]
    skill: SkipValidation[Skill | None]
    max_iterations: int
    budget: Budget
    workspace: Path
    isolation: Isolation | Literal["auto"]
    on_escalate: SkipValidation[EscalationHook | None]

    @classmethod
    def of(cls, options: LoopOptions, **keywords: Any) -> Settings:
        """``options`` with the loop's own keywords, checked together (a new run id unless one
        was given; the gates' test paths protected unless ``protect`` says otherwise)."""
        given = {**dict(options), **keywords, "run_id": options.run_id or new_run_id()}
        if options.protect is None:  # a gate's test path outside the workspace is refused here
            given["protect"] = default_protect(given["gates"])
        if not given["goal"]:
            raise ConfigError("goal: must not be empty")
        check_max_iterations(given["max_iterations"])
        cascade = given.get("cascade")
        if cascade is not None and cascade.models[0].name != given["agent"].model.name:
            raise ConfigError(
                f"cascade: its first model ({cascade.models[0].name}) must be the agent's "
                f"({given['agent'].model.name})"
            )
        if not given["gates"] and given["critic"] is None and given["human"] is None:
            raise ConfigError(
                "gates/critic: give at least one gate or a critic; nothing else can pass a round"
            )
        return cls(**given)

    def hooks_sandbox(self) -> Sandbox:
        """Where the ``on_round`` and ``on_escalate`` commands run."""
        return self.hook_sandbox or self.agent.sandbox or default_sandbox()

    def skill_criteria(self) -> str | None:
        """SKILL.md's success criteria, rubric and rules, unless the critic was given its own."""
        if self.skill is None or self.critic is None or self.critic.criteria_given:
            return None
        return self.skill.render_for_critic()

    def report_path(self, progress_path: Path | None, workspace: Path | None) -> Path | None:
        """Where the escalation report goes: beside progress.md, else in the workspace."""
        if progress_path is not None:
            return progress_path.with_suffix(".escalation.md")
        return None if workspace is None else workspace / ".harness" / f"{self.name}.escalation.md"
