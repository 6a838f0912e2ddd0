"""``Settings``: everything one outer loop runs with, in one frozen object checked once.

:class:`~harness.outer.loop.OuterLoop` takes its fields as keywords: the loop's goal, agent,
checks and bounds, its rules (:class:`~harness.outer.rules.LoopRules`, which loop.toml's
:class:`~harness.spec.LoopSpec` extends too), and what only a running process can give (sinks,
callables, servers, a sandbox). The loop's parts read every setting here, so a setting added
later is one field and its use.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, SkipValidation, field_validator, model_validator

from harness.agent.session import Session, TakesTools
from harness.core.errors import ConfigError
from harness.core.redact import Redactor
from harness.core.section import named_errors
from harness.core.sink import NULL_SINK, EventSink
from harness.memory.skill import Skill
from harness.outer.cascade import Cascade
from harness.outer.options import (
    CiWait,
    CriticArtifact,
    EscalationHook,
    FinishHook,
    ResumeHook,
    RoundHook,
    new_run_id,
)
from harness.outer.rules import Earlier, LoopRules
from harness.sandbox import Sandbox, default_sandbox
from harness.tools.mcp import McpServer
from harness.verify.gates import Gate
from harness.verify.human import HumanGate
from harness.verify.panel import Reviewer
from harness.verify.round import default_protect


@named_errors("")
class Settings(LoopRules):
    """One outer loop's settings: :class:`~harness.outer.loop.OuterLoop`'s keywords, checked
    together as they are made (docs/outer-loop.md lists them)."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    goal: str
    agent: SkipValidation[Session]
    gates: SkipValidation[tuple[Gate, ...]] = ()  # a HumanGate given among them is ``human``
    human: SkipValidation[HumanGate | None] = None  # asked after the gates and the critic pass
    critic: SkipValidation[Reviewer | None] = None
    skill: SkipValidation[Skill | None] = None  # a path given is loaded
    workspace: Path = Path(".")
    on_escalate: SkipValidation[EscalationHook | None] = None
    protect: tuple[str, ...]  # the patterns given, or (None given) the gates' test paths
    critic_artifact: CriticArtifact = "diff"
    earlier: Earlier = "resume"
    run_id: str = Field(default_factory=new_run_id)  # "" (or None): a new one
    start: str | None = None  # a commit a new run's branch starts from; None: HEAD
    events: SkipValidation[EventSink] = NULL_SINK
    loop_file: str | None = None  # the loop.toml the loop was built from, for a replay
    # None: the default redactor (the environment's secrets)
    redact: SkipValidation[Callable[[str], str]] = Field(default_factory=lambda: _redactor())
    on_round: SkipValidation[RoundHook | None] = None
    mcp: SkipValidation[tuple[McpServer, ...]] = ()  # started with the run, stopped at its end
    hook_sandbox: SkipValidation[Sandbox | None] = None  # None: the agent's sandbox
    pins: tuple[tuple[str, str], ...] = ()  # (path, sha256) of the configuration files read
    ci: SkipValidation[CiWait | None] = None  # waits for CI on each round that passed its checks
    on_finish: SkipValidation[FinishHook | None] = None  # the connectors, told of the result
    on_resume: SkipValidation[ResumeHook | None] = None  # carries what the earlier run kept
    cascade: SkipValidation[Cascade | None] = None  # the models rounds climb (the agent's first)

    @model_validator(mode="before")
    @classmethod
    def _complete(cls, given: dict[str, Any]) -> dict[str, Any]:
        """A HumanGate among the gates taken out as ``human``, a skill's path loaded, and (none
        given) the gates' test paths protected (one outside the workspace is refused here)."""
        gates = tuple(given.get("gates", ()))
        humans = [gate for gate in gates if isinstance(gate, HumanGate)]
        if len(humans) > 1:
            raise ConfigError("gates: give at most one HumanGate")
        checks = tuple(gate for gate in gates if not isinstance(gate, HumanGate))
        skill, protect = given.get("skill"), given.get("protect")
        if given.get("budget") is None:  # None: the rules' default budget
            given = {k: v for k, v in given.items() if k != "budget"}
        return {
            **given,
            "goal": (given.get("goal") or "").strip(),
            "gates": checks,
            "human": humans[0] if humans else given.get("human"),
            "skill": Skill.load(skill) if isinstance(skill, str | Path) else skill,
            "protect": default_protect(checks) if protect is None else protect,
        }

    @model_validator(mode="after")
    def _check(self) -> Settings:
        if not self.goal:
            raise ConfigError("goal: must not be empty")
        if self.mcp and not isinstance(self.agent, TakesTools):
            raise ConfigError(
                f"mcp: a {type(self.agent).__name__} session cannot use the tools of the loop's "
                "MCP servers; remove [[mcp]], or use the harness's own agent"
            )
        cascade, model = self.cascade, self.agent.model
        if cascade is not None and cascade.models[0].name != model.name:
            raise ConfigError(
                f"cascade: its first model ({cascade.models[0].name}) must be the agent's "
                f"({model.name})"
            )
        if not self.gates and self.critic is None and self.human is None:
            raise ConfigError(
                "gates/critic: give at least one gate or a critic; nothing else can pass a round"
            )
        return self

    @field_validator("on_round")
    @classmethod
    def _on_round(cls, value: RoundHook | None) -> RoundHook | None:
        if isinstance(value, str) and not value.strip():
            raise ValueError("give a command or a callable")
        return value

    @field_validator("run_id", "redact", mode="before")
    @classmethod
    def _default(cls, value: object, info: Any) -> object:
        return value or (new_run_id() if info.field_name == "run_id" else _redactor())

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


def _redactor() -> Callable[[str], str]:
    return Redactor().redact_text
