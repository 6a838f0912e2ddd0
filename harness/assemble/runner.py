"""The session ``[agent] runner`` names, when it is not the harness's own agent."""

from __future__ import annotations

from harness.models.base import Model
from harness.runners import runner_class
from harness.runners.base import ExternalRunner
from harness.runners.command import CommandRunner
from harness.sandbox import Sandbox
from harness.spec.loop_spec import LoopSpec


def external_runner(config: LoopSpec, model: Model, sandbox: Sandbox) -> ExternalRunner:
    """The external runner ``[agent] runner`` names (not ``harness``), found and checked now:
    a program that is missing or of a version known not to work is a ConfigError (exit 2)
    naming the install command. ``[agent] path`` is relative to loop.toml; ``max_steps`` caps
    the session's model requests, ``session_timeout`` its time."""
    agent = config.agent
    path = config.root / agent.path if agent.path is not None else None
    steps, seconds = agent.max_steps, agent.session_timeout
    if agent.runner == "command":
        assert agent.command is not None  # the spec's checks require it
        return CommandRunner(
            model, agent.command, path=path, sandbox=sandbox, max_requests=steps, timeout=seconds
        )
    runner = runner_class(agent.runner)
    return runner(model, path=path, sandbox=sandbox, max_requests=steps, timeout=seconds)
