"""The ``subagent`` tool: hand a sub-problem to a child session and read back its answer.

The child starts with a fresh context (its system prompt and the task, nothing of the parent's
conversation), a subset of the parent's tools, and optionally another model and system prompt
from a named :class:`Profile`. It works in the same workspace and sandbox, under the same
permission rules and hooks. Its model calls go through the parent's meter, so its spend counts
against the run's budget and a call that would pass what is left is refused before it is made.
It has its own step cap, and children nest at most ``max_depth`` deep. Its final answer and the
files it changed come back as the parent's observation; its whole run is kept in the parent's
:attr:`~harness.agent.agent.AgentRun.subagents`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Protocol

from pydantic import Field

from harness.agent.config import Steps
from harness.core.errors import Stopped, ToolError
from harness.core.section import Section, check_field
from harness.models.base import Model
from harness.tools import Tool, ToolResult

SUBAGENT_TOOL = "subagent"
CHILD_STEPS = 20
"""A child session's step cap when its profile names none."""


class SubagentProfileConfig(Section):
    """``[subagents.profiles.NAME]``: how a child session the agent starts is set up."""

    model: str | None = Field(None, min_length=1)  # default: the author's model
    system_prompt: str | None = None
    tools: list[str] | None = None  # a subset of the agent's tools; default: all of them
    max_steps: Steps = CHILD_STEPS


class SubagentsConfig(Section):
    """``[subagents]``: gives the agent the ``subagent`` tool."""

    max_depth: int = Field(1, ge=1, le=5)  # children of children ... at most this deep
    max_steps: Steps = CHILD_STEPS  # a child's step cap when no profile is named
    profiles: dict[Annotated[str, Field(pattern=r"^[\w.-]{1,64}$")], SubagentProfileConfig] = {}


@dataclass(frozen=True)
class Profile:
    """How a child session is set up: its model (None: the parent's), system prompt (None: the
    default), tools (names among the parent's; None: all of them) and step cap (checked as
    :class:`SubagentProfileConfig` declares it)."""

    model: Model | None = None
    system_prompt: str | None = None
    tools: tuple[str, ...] | None = None
    max_steps: int = CHILD_STEPS

    def __post_init__(self) -> None:
        check_field(SubagentProfileConfig, "max_steps", self.max_steps)


@dataclass(frozen=True)
class Subagents:
    """Gives an agent the ``subagent`` tool: named ``profiles``, and how deep children nest
    (checked as :class:`SubagentsConfig` declares it)."""

    profiles: Mapping[str, Profile] = field(default_factory=dict)
    max_depth: int = SubagentsConfig().max_depth
    default: Profile = Profile()  # for a call that names no profile

    def __post_init__(self) -> None:
        check_field(SubagentsConfig, "max_depth", self.max_depth)

    def profile(self, name: str | None) -> Profile:
        if name is None:
            return self.default
        if name not in self.profiles:
            known = ", ".join(self.profiles) or "(none)"
            raise ToolError(f"no subagent profile {name!r}; the profiles are: {known}")
        return self.profiles[name]


class ChildRun(Protocol):
    """What the observation reads of a child's :class:`~harness.agent.agent.AgentRun`."""

    final: str | None
    steps: int
    stop_message: str
    interruption: Stopped | None
    files_written: set[str]

    @property
    def stop_reason(self) -> str: ...  # a read-only str: AgentRun's is an AgentStop


Delegate = Callable[[str, str | None, list[str] | None], ChildRun]


def subagent_tool(delegate: Delegate, profiles: Mapping[str, Profile]) -> Tool:
    """The tool the model calls; ``delegate`` runs the child session and returns its run."""
    names = ", ".join(profiles) or "none; the default one is used"

    def subagent(
        task: str, profile: str | None = None, tools: list[str] | None = None
    ) -> ToolResult:
        """Hand a sub-problem to a helper agent with a fresh context; its final answer and the
        files it changed come back. Give it everything it needs in the task.

        Args:
            task: The whole task: the helper sees nothing of this conversation.
            profile: A named helper set up in the loop's configuration.
            tools: Names of the tools it may use (a subset of yours); default: the profile's.
        """
        if not task.strip():
            raise ToolError("task is empty")
        run = delegate(task, profile, tools)
        return _observation(run)

    tool = Tool(subagent, name=SUBAGENT_TOOL)
    tool.description = f"{tool.description} Profiles: {names}."
    return tool


def _observation(run: ChildRun) -> ToolResult:
    changed = sorted(run.files_written)
    files = f"\nfiles changed: {', '.join(changed)}" if changed else "\nfiles changed: none"
    if run.interruption is not None:
        return ToolResult(
            f"error: the subagent was stopped after {run.steps} step(s): "
            f"{run.interruption.message}{files}",
            is_error=True,
        )
    if run.final is None:
        return ToolResult(
            f"error: the subagent gave no answer ({run.stop_reason}: {run.stop_message}){files}",
            is_error=True,
        )
    return ToolResult(f"subagent answered in {run.steps} step(s):\n{run.final}{files}")
