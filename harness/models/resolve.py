"""A model from its name: ``scripted:PATH`` or any litellm model string."""

from __future__ import annotations

from typing import Any

from harness.models.base import Model


def resolve_model(spec: str | Model, **kwargs: Any) -> Model:
    """A model from a string: ``scripted:PATH`` or any litellm model string.

    ``kwargs`` are litellm options (``api_base``, ``timeout``, ``num_retries``, ...); a scripted
    model takes none and ignores them.
    """
    if not isinstance(spec, str):
        return spec
    if spec.startswith("scripted:"):
        from harness.models.scripted import ScriptedModel

        return ScriptedModel.from_file(spec.removeprefix("scripted:"))
    from harness.models.litellm_model import LiteLLMModel

    return LiteLLMModel(spec, **kwargs)
