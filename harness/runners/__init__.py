"""External coding agents as a round's session: each a runner meeting the session protocol,
run inside the harness's sandbox and talking to models only through the harness's gateway."""

from __future__ import annotations

import pkgutil
from typing import TYPE_CHECKING

from harness.core.errors import ConfigError

if TYPE_CHECKING:
    from harness.runners.base import ExternalRunner

RUNNERS = {
    "aider": "harness.runners.aider:AiderRunner",
    "claude-code": "harness.runners.claude_code:ClaudeCodeRunner",
    "codex": "harness.runners.codex:CodexRunner",
    "command": "harness.runners.command:CommandRunner",
    "mini-swe-agent": "harness.runners.mini_swe_agent:MiniSweAgentRunner",
}
"""Each external runner's name in loop.toml (``[agent] runner``) and where its class is."""


def runner_class(name: str) -> type[ExternalRunner]:
    """The runner class ``name`` names; a :class:`ConfigError` naming ``agent.runner`` if none."""
    where = RUNNERS.get(name)
    if where is None:
        known = ", ".join(["harness", *RUNNERS])
        raise ConfigError(f"agent.runner: {name!r} has no runner here; choose one of {known}")
    found: type[ExternalRunner] = pkgutil.resolve_name(where)
    return found


def runner_name(session: object) -> str:
    """The ``[agent] runner`` name of a round's session: an external runner's own name,
    ``harness`` for the harness's agent, else the session's class name."""
    from harness.agent.agent import Agent
    from harness.runners.base import ExternalRunner

    if isinstance(session, ExternalRunner):
        return session.name
    return "harness" if isinstance(session, Agent) else type(session).__name__
