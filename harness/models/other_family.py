"""The critic's model when none is named: another family's, when one is configured and reachable.

A critic of the author's own family grades its work leniently. So when nothing names the
critic's model (``--critic-model``, ``HARNESS_CRITIC_MODEL``, ``[critic] model``), the critic
uses a model of another family than the author's, if one is **configured and reachable**:

- *configured*: a model loop.toml names for other work (a cascade's later models, the fleet's
  planner), then the model :data:`OTHER_FAMILY_CRITICS` pairs with each provider key variable
  set (not empty) in the environment, in the table's order;
- *reachable*: litellm places the model with a provider other than the author's, and that
  provider's API key is in the environment (the same check a run makes of every model before it
  starts). No request is sent to find out: a key the provider refuses fails the critic's call
  as it would fail any critic's.

The family compared is litellm's provider (``gpt-4o`` and ``openai/o3`` are both ``openai``).
There is no automatic choice for an author that is not a litellm model (a scripted one), nor
when ``[model_options]`` gives ``api_base`` or ``api_key``: those name the author's server and
key, which a model of another family cannot use. Then, and when no candidate is reachable, the
critic uses the author's model, and the run says so as it starts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from harness.models.litellm_model import provider

OTHER_FAMILY_CRITICS: tuple[tuple[str, str], ...] = (
    ("OPENAI_API_KEY", "openai/gpt-4.1"),
    ("ANTHROPIC_API_KEY", "anthropic/claude-sonnet-4-5"),
    ("GEMINI_API_KEY", "gemini/gemini-2.5-pro"),
    ("MISTRAL_API_KEY", "mistral/mistral-large-latest"),
    ("DEEPSEEK_API_KEY", "deepseek/deepseek-chat"),
)
"""Each provider key variable, and the model the critic uses when only its key is set."""

SERVER_OPTIONS = ("api_base", "api_key")
"""``[model_options]`` that tie every model to the author's server: no automatic choice."""


def other_family_candidates(
    author: str, named: Sequence[str], environ: Mapping[str, str]
) -> list[str]:
    """The models to try as the critic, in order (see the module doc): ``named`` first, then the
    table's model for each key set in ``environ``; only those of another provider than
    ``author``'s, each once."""
    keyed = [model for variable, model in OTHER_FAMILY_CRITICS if environ.get(variable)]
    own = provider(author)
    return [
        model
        for model in dict.fromkeys([*named, *keyed])
        if (found := provider(model)) is not None and found != own
    ]
