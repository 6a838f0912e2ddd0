"""harness: keep an agent working until the job is verifiably done.

Public names are loaded on first use, so ``import harness`` stays fast and never imports litellm.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.core.lazy import lazy_exports
from harness.core.version import VERSION

__version__ = VERSION

_EXPORTS = {
    "LiteLLMModel": "harness.models.litellm_model",
    "ScriptedModel": "harness.models.scripted",
    "ToolCall": "harness.models.base",
    "Usage": "harness.core.usage",
    "Agent": "harness.agent.agent",
    "AgentRun": "harness.agent.agent",
    "AgentStop": "harness.agent.agent",
    "ActionHook": "harness.agent.actions",
    "Block": "harness.agent.actions",
    "Subagents": "harness.agent.subagent",
    "Permissions": "harness.tools.permissions",
    "Tool": "harness.tools",
    "ToolResult": "harness.tools",
    "tool": "harness.tools",
    "default_tools": "harness.tools",
    "CommandGate": "harness.verify.gates",
    "PytestGate": "harness.verify.pytest_gate",
    "PredicateGate": "harness.verify.gates",
    "GateReport": "harness.verify.gates",
    "Critic": "harness.verify.critic",
    "Verdict": "harness.verify.critic",
    "CriticPanel": "harness.verify.panel",
    "Skill": "harness.memory.skill",
    "Progress": "harness.memory.progress",
    "Loop": "harness.engine.loop",
    "ForEach": "harness.engine.foreach",
    "Condition": "harness.engine.condition",
    "LoopResult": "harness.engine.loop",
    "StopReason": "harness.core.stop",
    "OuterLoop": "harness.outer.loop",
    "LoopOptions": "harness.outer.options",
    "LoopSpec": "harness.spec.loop_spec",
    "Fleet": "harness.scale.fleet",
    "HumanGate": "harness.verify.human",
    "Batch": "harness.scale.batch",
    "BestOf": "harness.scale.best_of",
    "BatchTask": "harness.scale.batch_task",
    "Subtask": "harness.scale.fleet",
    "RunResult": "harness.outer.result",
    "Budget": "harness.core.budget",
    "ConfigError": "harness.core.errors",
    "Sandbox": "harness.sandbox",
    "HarnessError": "harness.core.errors",
}

__all__ = [
    "ActionHook",
    "Agent",
    "AgentRun",
    "AgentStop",
    "Batch",
    "BatchTask",
    "BestOf",
    "Block",
    "Budget",
    "CommandGate",
    "Condition",
    "ConfigError",
    "Critic",
    "CriticPanel",
    "Fleet",
    "ForEach",
    "GateReport",
    "HarnessError",
    "HumanGate",
    "LiteLLMModel",
    "Loop",
    "LoopOptions",
    "LoopResult",
    "LoopSpec",
    "OuterLoop",
    "Permissions",
    "PredicateGate",
    "Progress",
    "PytestGate",
    "RunResult",
    "Sandbox",
    "ScriptedModel",
    "Skill",
    "StopReason",
    "Subagents",
    "Subtask",
    "Tool",
    "ToolCall",
    "ToolResult",
    "Usage",
    "Verdict",
    "default_tools",
    "tool",
]

if TYPE_CHECKING:
    from harness.agent.actions import ActionHook, Block
    from harness.agent.agent import Agent, AgentRun, AgentStop
    from harness.agent.subagent import Subagents
    from harness.core.budget import Budget
    from harness.core.errors import ConfigError, HarnessError
    from harness.core.stop import StopReason
    from harness.core.usage import Usage
    from harness.engine.condition import Condition
    from harness.engine.foreach import ForEach
    from harness.engine.loop import Loop, LoopResult
    from harness.memory.progress import Progress
    from harness.memory.skill import Skill
    from harness.models.base import ToolCall
    from harness.models.litellm_model import LiteLLMModel
    from harness.models.scripted import ScriptedModel
    from harness.outer.loop import OuterLoop
    from harness.outer.result import RunResult
    from harness.sandbox import Sandbox
    from harness.scale.batch import Batch
    from harness.scale.batch_task import BatchTask
    from harness.scale.best_of import BestOf
    from harness.scale.fleet import Fleet, Subtask
    from harness.tools import Tool, ToolResult, default_tools, tool
    from harness.tools.permissions import Permissions
    from harness.verify.critic import Critic, Verdict
    from harness.verify.gates import CommandGate, GateReport, PredicateGate
    from harness.verify.human import HumanGate
    from harness.verify.panel import CriticPanel
    from harness.verify.pytest_gate import PytestGate


__getattr__ = lazy_exports(__name__, _EXPORTS)


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
