"""What loop.toml says about the agent's session beyond ``[agent]``: its ``[permissions]``, its
``[[action_hooks]]`` and its ``[subagents]``, as the :class:`~harness.agent.agent.Agent` takes them."""

from __future__ import annotations

from collections.abc import Callable

from harness.agent.actions import ActionHook
from harness.agent.subagent import Profile, Subagents
from harness.models.base import Model
from harness.spec.loop_spec import LoopSpec
from harness.tools.permissions import Permissions


def permissions(config: LoopSpec) -> Permissions | None:
    """The rules, or None when ``[permissions]`` sets none (every call allowed, nothing logged)."""
    rules = config.permissions
    if not (rules.allow or rules.ask or rules.deny) and rules.default == "allow":
        return None
    return rules


def action_hooks(config: LoopSpec) -> tuple[ActionHook, ...]:
    return tuple(
        ActionHook(
            **hook.model_dump(exclude={"command", "tools"}),
            run=hook.command,
            tools=tuple(hook.tools),
        )
        for hook in config.action_hooks
    )


def subagents(config: LoopSpec, model: Callable[[str], Model]) -> Subagents | None:
    """``[subagents]`` with each profile's model resolved by ``model``."""
    found = config.subagents
    if found is None:
        return None
    profiles = {
        name: Profile(
            model=model(profile.model) if profile.model else None,
            system_prompt=profile.system_prompt,
            tools=tuple(profile.tools) if profile.tools is not None else None,
            max_steps=profile.max_steps,
        )
        for name, profile in found.profiles.items()
    }
    default = Profile(max_steps=found.max_steps)
    return Subagents(profiles=profiles, max_depth=found.max_depth, default=default)
