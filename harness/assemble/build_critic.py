"""The loop's critic, or its panel of critics, as ``[critic]`` and ``[[critic.panel]]`` describe."""

from __future__ import annotations

import os
from collections.abc import Callable

from harness.assemble.named_models import (
    CRITIC_MODEL_ENV,
    MODEL_ENV,
    Overrides,
    choose_model,
    configured_model,
    critic_model,
    overridable,
    override_source,
    preflighted,
    rooted_model,
    spec_model,
)
from harness.memory.skill import Skill
from harness.models.base import Model
from harness.spec.loop_spec import LoopSpec
from harness.verify.critic import Critic
from harness.verify.critic_config import ModelChoice
from harness.verify.human import HumanGate
from harness.verify.panel import CriticPanel, Reviewer


def loop_critic(config: LoopSpec, overrides: Overrides = Overrides()) -> Reviewer | None:
    """The critic (or panel) ``build_loop`` would give the loop, on its own (for calibration).

    With no author model anywhere, a critic model given by ``--critic-model`` or
    ``HARNESS_CRITIC_MODEL`` stands in for it: judging alone needs no author."""
    configured = configured_model(config)
    given = overrides.critic_model or os.environ.get(CRITIC_MODEL_ENV)
    if given and not (overrides.model or os.environ.get(MODEL_ENV) or configured):
        name = rooted_model(given, config.root) or given
        source: str | None = "--critic-model" if overrides.critic_model else CRITIC_MODEL_ENV
    else:
        name = choose_model(overrides.model, configured)
        source = "--model" if overrides.model else None
    author = overridable(lambda: spec_model(name, config.model_options), source)
    critic, checks = unchecked_critic(config, overrides, config.load_skill(), name, author)
    for made, field in checks:  # every model preflighted; an error names what chose it
        preflighted(made, field)
    return critic


def unchecked_critic(
    config: LoopSpec,
    overrides: Overrides,
    skill: Skill | None,
    author_name: str,
    author: Model,
    *,
    replay: Model | None = None,
    wrap: Callable[[Model], Model] | None = None,
) -> tuple[Reviewer | None, list[tuple[Model, str]]]:
    """``[critic]``: one critic, or a panel of ``[[critic.panel]]`` critics (None if disabled),
    before the preflight, and each model with the field (or the flag or variable) that chose it;
    ``replay``, when given, answers for every critic; ``wrap`` as :func:`build_loop` says."""
    settings = config.critic
    checks: list[tuple[Model, str]] = []
    if not settings.enabled:
        return None, checks
    criteria = settings.criteria or (skill.render_for_critic() if skill else None)
    threshold = settings.threshold_for(skill.threshold if skill else None)
    fallback = override_source(overrides.critic_model, "--critic-model", CRITIC_MODEL_ENV)
    default = overrides.critic_model or os.environ.get(CRITIC_MODEL_ENV) or settings.model

    def chosen(given: ModelChoice | None, field: str) -> Model:
        source = fallback if given is None else None
        made = replay or overridable(
            lambda: critic_model(default if given is None else given, config, author_name, author),
            source,
        )
        checks.append((made, source or field))
        return made if wrap is None else wrap(made)

    if not settings.panel:
        return Critic(chosen(None, "critic.model"), criteria=criteria, threshold=threshold), checks
    critics = [
        Critic(
            chosen(seat.model, f"critic.panel[{index}].model"),
            criteria=criteria,
            threshold=threshold,
            rubric=skill.criteria if skill else (),
            role=seat.role,
            instructions=seat.instructions,
        )
        for index, seat in enumerate(settings.panel)
    ]
    referee = HumanGate() if settings.on_split == "person" else None
    panel = CriticPanel(
        critics, aggregate=settings.aggregate, spread=settings.spread, referee=referee
    )
    return panel, checks
