"""Models: the Model protocol, the litellm-backed model, the scripted model, token counting and
the metered model that enforces a run's budget."""

from harness.core.budget import Budget
from harness.models.base import Model, Reply, ToolCall
from harness.models.budget import MeteredModel
from harness.models.litellm_model import LiteLLMModel
from harness.models.resolve import resolve_model
from harness.models.scripted import ScriptedModel

__all__ = [
    "Budget",
    "LiteLLMModel",
    "MeteredModel",
    "Model",
    "Reply",
    "ScriptedModel",
    "ToolCall",
    "resolve_model",
]
