"""harness: keep an agent working until the job is verifiably done.

Public names are loaded on first use, so ``import harness`` stays fast and never imports litellm.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "LiteLLMModel": "harness.litellm_model",
    "ScriptedModel": "harness.scripted",
    "ToolCall": "harness.model",
    "Usage": "harness.model",
    "Agent": "harness.agent",
    "AgentRun": "harness.agent",
    "AgentStop": "harness.agent",
    "Tool": "harness.tools",
    "ToolResult": "harness.tools",
    "tool": "harness.tools",
    "default_tools": "harness.tools",
    "CommandGate": "harness.gates",
    "PytestGate": "harness.gates",
    "PredicateGate": "harness.gates",
    "GateReport": "harness.gates",
    "Critic": "harness.critic",
    "Verdict": "harness.critic",
    "Skill": "harness.skill",
    "Progress": "harness.progress",
    "Loop": "harness.loop",
    "ForEach": "harness.foreach",
    "Condition": "harness.condition",
    "LoopResult": "harness.loop",
    "StopReason": "harness.stop",
    "OuterLoop": "harness.outer",
    "Fleet": "harness.fleet",
    "Subtask": "harness.fleet",
    "RunResult": "harness.result",
    "Budget": "harness.budget",
    "ConfigError": "harness.errors",
    "HarnessError": "harness.errors",
}

__all__ = [
    "Agent",
    "AgentRun",
    "AgentStop",
    "Budget",
    "CommandGate",
    "Condition",
    "ConfigError",
    "Critic",
    "Fleet",
    "ForEach",
    "GateReport",
    "HarnessError",
    "LiteLLMModel",
    "Loop",
    "LoopResult",
    "OuterLoop",
    "PredicateGate",
    "Progress",
    "PytestGate",
    "RunResult",
    "ScriptedModel",
    "Skill",
    "StopReason",
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
    from harness.agent import Agent, AgentRun, AgentStop
    from harness.budget import Budget
    from harness.condition import Condition
    from harness.critic import Critic, Verdict
    from harness.errors import ConfigError, HarnessError
    from harness.fleet import Fleet, Subtask
    from harness.foreach import ForEach
    from harness.gates import CommandGate, GateReport, PredicateGate, PytestGate
    from harness.litellm_model import LiteLLMModel
    from harness.loop import Loop, LoopResult
    from harness.model import ToolCall, Usage
    from harness.outer import OuterLoop
    from harness.progress import Progress
    from harness.result import RunResult
    from harness.scripted import ScriptedModel
    from harness.skill import Skill
    from harness.stop import StopReason
    from harness.tools import Tool, ToolResult, default_tools, tool


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
