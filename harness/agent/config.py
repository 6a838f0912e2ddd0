"""``[agent]``: the inner loop's settings, declared once.

loop.toml reads them through :class:`~harness.spec.LoopSpec`; :class:`~harness.agent.agent.Agent`
takes this model (:meth:`~harness.agent.agent.Agent.from_config`) and reads its keyword defaults
and checks from it, so a default or a bound is written here and nowhere else.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator

from harness.core.section import Section
from harness.models.base import ContextWindow, ReplyTokens
from harness.tools.toolkit import SHELL_TIMEOUT, ShellTimeout

DEFAULT_SYSTEM_PROMPT = """\
You are a careful software agent in a workspace folder; paths are relative to it. Use the tools \
in small verified steps: read before you edit, run the relevant checks after each change. When \
done, call `submit` (or answer without a tool call) with what you changed and how you checked \
it."""
"""The system prompt when ``system_prompt`` gives none."""

ESCALATE_AFTER = 2
"""A cascade's failed rounds on one model before the next takes over, unless ``escalate_after``
says otherwise."""

Steps = Annotated[int, Field(ge=1, le=10_000)]
"""A session's step cap: model replies in one session."""

SessionTimeout = Annotated[float, Field(gt=0)]
"""An external agent's session time limit, seconds (positive and finite)."""

CompactionName = Literal["none", "summarize", "mask_observations"]
RunnerName = Literal["harness", "claude-code", "codex", "aider", "mini-swe-agent", "command"]
"""What runs a round's session: the harness's own agent, an external agent, or any program."""


class AgentConfig(Section):
    """How one inner session runs: who runs it, its step cap, compaction, prompt and output
    limits (``runner``, ``command`` and ``path`` choose an external session: harness.runners)."""

    runner: RunnerName = "harness"
    command: list[Annotated[str, Field(min_length=1)]] | None = Field(None, min_length=1)
    """runner "command": the program and its arguments (``{task_file}``: the task's file)."""
    path: str | None = Field(None, min_length=1)
    """An external agent's program (relative to loop.toml); default: found on PATH."""
    max_steps: Steps = 50
    # mask_observations: masking old tool outputs needs no model call and keeps the reasoning
    compaction: CompactionName = "mask_observations"
    compaction_threshold: float = Field(0.8, gt=0, le=1)  # of the window, where compaction starts
    context_window: ContextWindow = None  # override for unknown or local models
    system_prompt: str | None = None
    max_tokens: ReplyTokens = None  # of each reply
    shell_timeout: ShellTimeout = SHELL_TIMEOUT  # run_shell's default, seconds
    session_timeout: SessionTimeout = 3600.0
    """An external agent's session: seconds it may run before it is stopped (``timed_out``);
    the harness's own agent is bounded by ``max_steps`` and ``[budget] seconds``."""
    # A model cascade: rounds start on the first model and move up the list after
    # ``escalate_after`` failed rounds on a model (instead of the top-level ``model``).
    models: list[Annotated[str, Field(min_length=1)]] | None = Field(None, min_length=1)
    escalate_after: int | None = Field(None, ge=1, le=100)  # default ESCALATE_AFTER

    @field_validator("models")
    @classmethod
    def _models(cls, value: list[str] | None, info: ValidationInfo) -> list[str] | None:
        if value is None:
            return value
        twice = [name for index, name in enumerate(value) if name in value[:index]]
        if twice:
            raise ValueError(f"{twice[0]!r} is listed twice")
        runner = info.data.get("runner", "harness")
        if runner != "harness":
            raise ValueError(f"runner {runner!r} runs one model; a cascade needs runner 'harness'")
        return value

    @field_validator("escalate_after")
    @classmethod
    def _escalate_after(cls, value: int | None, info: ValidationInfo) -> int | None:
        if value is not None and info.data.get("models") is None:
            raise ValueError("applies to a cascade only: give models = [...]")
        return value

    @property
    def rounds_per_model(self) -> int:
        """Failed rounds on a cascade's model before the next one takes over."""
        return self.escalate_after or ESCALATE_AFTER


AGENT_KEYWORDS = {"system_prompt", "max_steps", "max_tokens", "shell_timeout"}
"""The fields :class:`~harness.agent.agent.Agent` takes as keywords of the same names."""

AGENT_DEFAULTS = AgentConfig()
"""The defaults, read by the keyword arguments of the classes that take these settings."""
