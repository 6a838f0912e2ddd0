"""Check that a model can be called before a run creates anything.

litellm says which provider a model string names (``get_llm_provider``) and which environment
variables that provider needs (``validate_environment``). A model string no provider claims, or a
missing API key, is bad configuration: :func:`preflight` raises :class:`ConfigError` naming the
model or the variable, before any branch, worktree or progress entry exists.

Only API keys are required here (``*_API_KEY`` variables, or ``api_key`` given to the model):
cloud credential chains (AWS profiles, Google application-default credentials) are resolved by
the provider's SDK at call time and are not checked.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.core.errors import ConfigError
from harness.models.base import Model
from harness.models.litellm_model import LiteLLMModel, load_litellm


def preflight(models: Iterable[tuple[str, Model]]) -> None:
    """Raise :class:`ConfigError` if any ``(field, model)`` cannot be called as configured.

    ``field`` is how the user set the model (``model``, ``critic.model``); the error starts
    with it. Models other than :class:`LiteLLMModel` (scripted ones) need no check.
    """
    seen: set[int] = set()
    for field, model in models:
        if isinstance(model, LiteLLMModel) and id(model) not in seen:
            seen.add(id(model))
            _check(field, model)


def _check(field: str, model: LiteLLMModel) -> None:
    litellm = load_litellm()
    api_base = model.litellm_kwargs.get("api_base")
    api_key = model.litellm_kwargs.get("api_key")
    try:
        provider = litellm.get_llm_provider(model.name, api_base=api_base)[1]
    except Exception as exc:  # litellm raises BadRequestError for a string it cannot place
        prefix, slash, _ = model.name.partition("/")
        known = f"no provider is called {prefix!r}" if slash else "it names no provider"
        raise ConfigError(
            f"{field}: unknown model {model.name!r}: {known}; write provider/model, such as "
            "openai/gpt-4o-mini or anthropic/claude-sonnet-4-5 (providers: "
            "https://docs.litellm.ai/docs/providers)"
        ) from exc
    if api_key:
        return
    found = litellm.validate_environment(model=model.name, api_base=api_base)
    missing = [name for name in found.get("missing_keys", ()) if name.endswith("_API_KEY")]
    if missing:
        names = " or ".join(missing)
        raise ConfigError(
            f"{field}: model {model.name!r} ({provider}) needs an API key: set {names} in the "
            "environment, or api_key in [model_options]"
        )
