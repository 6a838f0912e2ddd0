"""From a validated ``loop.toml`` to a ready :class:`OuterLoop`."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.agent.agent import Agent
from harness.agent.compaction import Compaction, MaskObservations, NoCompaction, Summarize
from harness.cli.config import (
    AgentConfig,
    CommandGateConfig,
    GateConfig,
    LoopConfig,
    PytestGateConfig,
)
from harness.core.errors import ConfigError
from harness.core.sink import EventSink
from harness.memory.skill import Skill
from harness.models.base import Model
from harness.models.budget import Budget
from harness.models.resolve import resolve_model
from harness.observe.run_summary import RUNS_DIR
from harness.outer.loop import OuterLoop
from harness.sandbox import Sandbox
from harness.verify.critic import Critic
from harness.verify.gates import CommandGate, Gate, PredicateGate, PytestGate

MODEL_ENV = "HARNESS_MODEL"
CRITIC_MODEL_ENV = "HARNESS_CRITIC_MODEL"


@dataclass(frozen=True)
class Overrides:
    """What the command line says over the file."""

    model: str | None = None
    critic_model: str | None = None
    max_iterations: int | None = None
    restart: bool = False


def choose_model(flag: str | None, configured: str | None) -> str:
    """Precedence: the ``--model`` flag, then ``HARNESS_MODEL``, then ``model`` in loop.toml."""
    chosen = flag or os.environ.get(MODEL_ENV) or configured
    if not chosen:
        raise ConfigError(
            f"model: no model given; set `model` in loop.toml, {MODEL_ENV}, or pass --model"
        )
    return chosen


def build_sandbox(config: LoopConfig, root: Path) -> Sandbox:
    """The ``[sandbox]`` of ``config``; the loop's progress file and run folders stay read-only."""
    settings = config.sandbox
    progress = config.progress_path(root)
    state = [progress, progress.with_name(progress.name + ".lock"), root / RUNS_DIR]
    return Sandbox(
        settings.backend, network=settings.network, env=settings.env, limits=settings.limits,
        readonly=state,
    )  # fmt: skip


def build_gate(config: GateConfig, root: Path, sandbox: Sandbox | None = None) -> Gate:
    if isinstance(config, PytestGateConfig):
        return PytestGate(config.args, timeout=config.timeout, sandbox=sandbox)
    if isinstance(config, CommandGateConfig):
        return CommandGate(config.cmd, name=config.name, timeout=config.timeout, sandbox=sandbox)
    module_name, _, function_name = config.target.partition(":")
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        function = getattr(importlib.import_module(module_name), function_name)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(
            f"gates: python gate target {config.target!r} cannot be loaded: {exc}"
        ) from exc
    return PredicateGate(function, name=config.name or function_name)


def build_compaction(config: AgentConfig) -> Compaction:
    """The session's compaction strategy, with loop.toml's threshold and window override."""
    if config.compaction == "none":
        return NoCompaction()
    strategy = Summarize if config.compaction == "summarize" else MaskObservations
    return strategy(threshold=config.compaction_threshold, context_window=config.context_window)


def build_loop(
    config: LoopConfig,
    root: Path,
    *,
    overrides: Overrides = Overrides(),
    events: EventSink,
    run_id: str | None = None,
    redact: Callable[[str], str] | None = None,
) -> OuterLoop:
    """The outer loop ``config`` describes; relative paths start at ``root``."""
    model_name = choose_model(overrides.model, _rooted(config.model, root))
    model = _model(model_name, config.model_options)
    skill = Skill.load(root / config.skill) if config.skill else None
    sandbox = build_sandbox(config, root)
    agent = Agent(
        model,
        system_prompt=config.agent.system_prompt,
        max_steps=config.agent.max_steps,
        compaction=build_compaction(config.agent),
        max_tokens=config.agent.max_tokens,
        shell_timeout=config.agent.shell_timeout,
        sandbox=sandbox,
    )
    critic = None
    if config.critic.enabled:
        critic_name = (
            overrides.critic_model
            or os.environ.get(CRITIC_MODEL_ENV)
            or _rooted(config.critic.model, root)
        )
        critic_model: Model = (
            _model(critic_name, config.model_options)
            if critic_name and critic_name != model_name
            else model
        )
        criteria = config.critic.criteria or (skill.render_for_critic() if skill else None)
        threshold = config.critic.threshold
        if threshold is None:
            threshold = skill.threshold if skill and skill.threshold is not None else 8.0
        critic = Critic(critic_model, criteria=criteria, threshold=threshold)
    return OuterLoop(
        config.goal,
        agent,
        gates=[build_gate(g, root, sandbox) for g in config.gates],
        critic=critic,
        skill=skill,
        progress=config.progress_path(root),
        checklist=config.checklist,
        restart=overrides.restart,
        max_iterations=overrides.max_iterations or config.max_iterations,  # flag is 1-100
        budget=Budget(**config.budget.model_dump()),
        workspace=root / config.workspace,
        isolation=config.isolation,
        on_escalate=config.on_escalate,
        protect=config.protect,
        patience=config.patience,
        rollback=config.rollback,
        merge=config.merge,
        name=config.name,
        events=events,
        critic_artifact=_artifact(config),
        run_id=run_id,
        redact=redact,
    )


def _artifact(config: LoopConfig) -> str:
    if config.critic.artifact != "file":
        return config.critic.artifact
    assert config.critic.file, "load_config checks critic.file"
    return f"file:{config.critic.file}"


def _model(name: str, options: dict[str, Any]) -> Model:
    """The model ``name`` with loop.toml's ``model_options``; their errors name the section."""
    try:
        return resolve_model(name, **options)
    except ConfigError as exc:
        if name.startswith("scripted:") or not options:
            raise
        raise ConfigError(f"model_options.{exc}") from exc


def _rooted(model: str | None, root: Path) -> str | None:
    """A ``scripted:PATH`` in loop.toml is relative to the file's folder."""
    if model and model.startswith("scripted:"):
        path = Path(model.removeprefix("scripted:"))
        return f"scripted:{path if path.is_absolute() else root / path}"
    return model
