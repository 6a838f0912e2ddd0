"""The models a loop.toml names, and what the command line and the environment say over it."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core.errors import ConfigError
from harness.models.base import Model
from harness.models.family import other_families_first
from harness.models.litellm_model import LiteLLMModel
from harness.models.other_family import SERVER_OPTIONS, other_family_candidates
from harness.models.preflight import preflight
from harness.models.resolve import resolve_model
from harness.outer.cascade import Cascade
from harness.outer.rules import Earlier
from harness.spec.loop_spec import LoopSpec
from harness.verify.critic_config import ModelChoice

MODEL_ENV = "HARNESS_MODEL"
CRITIC_MODEL_ENV = "HARNESS_CRITIC_MODEL"


class OverrideError(ConfigError):
    """A problem with what the command line or the environment gave, not with loop.toml."""


@dataclass(frozen=True)
class Overrides:
    """What the command line says over the file."""

    model: str | None = None
    critic_model: str | None = None
    max_iterations: int | None = None
    earlier: Earlier = "resume"  # what the run does with an earlier run of its loop
    issue: int | None = None  # the issue the run came from (its connectors comment there)
    start: str | None = None  # a commit the run's branch starts from (a pushed one); None: HEAD

    @classmethod
    def from_flags(cls, args: Any, **more: Any) -> Overrides:
        """What ``--model``, ``--critic-model``, ``--max-iterations`` and ``--restart`` say."""
        earlier: Earlier = "restart" if args.restart else "resume"
        return cls(args.model, args.critic_model, args.max_iterations, earlier, **more)


def override_source(flag: str | None, flag_name: str, variable: str) -> str | None:
    """What names a model over loop.toml: ``flag_name`` when given, else ``variable`` when set."""
    return flag_name if flag else variable if os.environ.get(variable) else None


def choose_model(flag: str | None, configured: str | None) -> str:
    """Precedence: the ``--model`` flag, then ``HARNESS_MODEL``, then ``model`` in loop.toml."""
    chosen = flag or os.environ.get(MODEL_ENV) or configured
    if not chosen:
        raise ConfigError(
            f"model: no model given; set `model` in loop.toml, {MODEL_ENV}, or pass --model"
        )
    return chosen


def critic_model(
    chosen: ModelChoice | None, config: LoopSpec, author_name: str, author: Model
) -> Model:
    """A critic's model: a name, or a list whose first model that passes :func:`preflight` is
    used (other families than the author's first with ``prefer_other_family``); none: a model
    of another family when one is configured and reachable (:mod:`harness.models.other_family`),
    else the author's model."""
    root = config.root
    if chosen is None:
        return other_family_model(config, author_name, author) or author
    if isinstance(chosen, list):
        if config.critic.prefer_other_family:
            chosen = other_families_first(chosen, author_name)
        names = [rooted_model(name, root) or name for name in chosen]
        before = names[: names.index(author_name)] if author_name in names else names
        return _first_reachable(before, config) or author  # the author's own: no need to try
    single = rooted_model(chosen, root)
    return spec_model(single, config.model_options) if single and single != author_name else author


def other_family_model(config: LoopSpec, author_name: str, author: Model) -> Model | None:
    """The first model of another family than the author's that is configured and reachable
    (see :mod:`harness.models.other_family`); None when there is none, or no choice to make."""
    if not isinstance(author, LiteLLMModel) or set(SERVER_OPTIONS) & set(config.model_options):
        return None
    named = [*(config.agent.models or ())[1:], *([config.fleet.model] if config.fleet else [])]
    named = [name for name in named if name]
    return _first_reachable(other_family_candidates(author_name, named, os.environ), config)


def _first_reachable(names: Iterable[str], config: LoopSpec) -> Model | None:
    """The first of ``names`` that passes :func:`preflight` as a critic; None when none does."""
    for name in names:
        try:
            found = spec_model(name, config.model_options)
            preflight([("critic.model", found)])
        except ConfigError:
            continue  # not set up here (no key, unknown provider): try the next one
        return found
    return None


def author_model(config: LoopSpec, overrides: Overrides = Overrides()) -> Model:
    """The author model ``build_loop`` would use, for work around the loop (plans, syntheses)."""
    return spec_model(author_name(config, overrides), config.model_options)


def author_name(config: LoopSpec, overrides: Overrides = Overrides()) -> str:
    """The author's model as named: ``--model``, else ``HARNESS_MODEL``, else loop.toml's."""
    return choose_model(overrides.model, configured_model(config))


def configured_model(config: LoopSpec) -> str | None:
    """The author's model as loop.toml names it: ``model``, else a cascade's first model."""
    first = config.agent.models[0] if config.agent.models else None
    return rooted_model(config.model or first, config.root)


def cascade_of(
    config: LoopSpec,
    overrides: Overrides,
    first: Model,
    author: Model,
    *,
    given: Model | None,
    wrap: Callable[[Model], Model] | None,
) -> tuple[Cascade | None, list[tuple[Model, str]]]:
    """loop.toml's cascade of ``[agent] models``, whose ``first`` was made already (``author``:
    as the loop calls it; the others go through ``wrap``), and every model of it as named, each
    with its field for the preflight. None and [] when a model given over it (``--model``,
    ``HARNESS_MODEL``, a replay's) plays every round; no cascade for a list of one model."""
    names = config.agent.models or []
    if given is not None or overrides.model or os.environ.get(MODEL_ENV) or not names:
        return None, []
    made = [first, *(named_model(name, config) for name in names[1:])]
    named = [(model, f"agent.models[{index}]") for index, model in enumerate(made)]
    if len(made) == 1:
        return None, named
    wrapped = [model if wrap is None else wrap(model) for model in made[1:]]
    return Cascade((author, *wrapped), config.agent.rounds_per_model), named


def profile_model(
    name: str, config: LoopSpec, given: Model | None, wrap: Callable[[Model], Model] | None
) -> Model:
    """A subagent profile's model ``name``: in a replay the recording answers it, as it
    answers the author (its calls are recorded among the author's); in a live replay it is
    ``name`` from the take-over on."""
    if given is not None:
        return given
    made = named_model(name, config)
    return made if wrap is None else wrap(made)


def named_model(name: str, config: LoopSpec) -> Model:
    """The model ``name`` as loop.toml spells it (a ``scripted:`` path is relative to it)."""
    return spec_model(rooted_model(name, config.root) or name, config.model_options)


def overridable(make: Callable[[], Model], source: str | None) -> Model:
    """``make()``; its :class:`ConfigError` is blamed on ``source`` (a flag or variable) if given."""
    try:
        return make()
    except ConfigError as exc:
        if source is None:
            raise
        raise OverrideError(f"{source}: {exc}") from exc


def preflighted(model: Model, source: str) -> None:
    """:func:`preflight` ``model``, its error starting with where it was given: the loop.toml
    field, or the flag or variable (then loop.toml is not to blame)."""
    try:
        preflight([(source, model)])
    except ConfigError as exc:
        if source in ("model", "critic.model") or source.startswith("critic.panel["):
            raise
        raise OverrideError(str(exc)) from exc


def spec_model(name: str, options: dict[str, Any]) -> Model:
    """The model ``name`` with loop.toml's ``model_options``; their errors name the section."""
    try:
        return resolve_model(name, **options)
    except ConfigError as exc:
        if name.startswith("scripted:") or not options:
            raise
        raise ConfigError(f"model_options.{exc}") from exc


def rooted_model(model: str | None, root: Path) -> str | None:
    """A ``scripted:PATH`` in loop.toml is relative to the file's folder."""
    if model and model.startswith("scripted:"):
        path = Path(model.removeprefix("scripted:"))
        return f"scripted:{path if path.is_absolute() else root / path}"
    return model
