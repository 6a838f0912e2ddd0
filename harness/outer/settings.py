"""What one outer loop was asked to do: its goal, checks, bounds and bookkeeping, validated once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from harness.agent.session import Session
from harness.core.budget import Budget
from harness.core.errors import ConfigError
from harness.core.sink import EventSink
from harness.engine.bounds import check_max_iterations
from harness.memory.skill import Skill
from harness.outer.escalation import EscalationHook
from harness.outer.options import LoopOptions
from harness.sandbox import Sandbox, default_sandbox
from harness.verify.gates import Gate
from harness.verify.human import HumanGate
from harness.verify.panel import Reviewer
from harness.workspace.git import Isolation

CRITIC_DIFF_CHARS = 20_000
"""How much of the run's diff the critic reads; a longer diff is cut with a stated marker."""


@dataclass(frozen=True)
class Settings:
    """An :class:`~harness.outer.loop.OuterLoop`'s arguments, checked; shared by its parts."""

    goal: str
    agent: Session
    gates: tuple[Gate, ...]
    critic: Reviewer | None
    skill: Skill | None
    max_iterations: int
    budget: Budget
    workspace: Path
    isolation: Isolation | Literal["auto"]
    on_escalate: EscalationHook | None
    options: LoopOptions
    protect: tuple[str, ...]  # the options' patterns, or the gates' defaults
    run_id: str
    redact: Callable[[str], str]
    human: HumanGate | None = None  # asked after the gates and the critic pass

    @property
    def name(self) -> str:
        return self.options.name

    @property
    def events(self) -> EventSink:
        return self.options.events

    def __post_init__(self) -> None:
        if not self.goal:
            raise ConfigError("goal: must not be empty")
        check_max_iterations(self.max_iterations)
        if not self.gates and self.critic is None and self.human is None:
            raise ConfigError(
                "gates/critic: give at least one gate or a critic; nothing else can pass a round"
            )

    def hooks_sandbox(self) -> Sandbox:
        """Where the ``on_round`` and ``on_escalate`` commands run."""
        return self.options.hook_sandbox or self.agent.sandbox or default_sandbox()

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
