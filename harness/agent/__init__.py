"""The inner loop: one tool-calling agent session, its compaction, transcript and ledger.

The names here load on first use, so a module that needs only the agent's settings
(:mod:`harness.agent.config`, which loop.toml's spec reads) does not import the session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.core.lazy import lazy_exports

_EXPORTS = {
    "Agent": "harness.agent.agent",
    "AgentRun": "harness.agent.agent",
    "AgentStop": "harness.agent.agent",
}

__all__ = ["Agent", "AgentRun", "AgentStop"]

if TYPE_CHECKING:
    from harness.agent.agent import Agent, AgentRun, AgentStop


__getattr__ = lazy_exports(__name__, _EXPORTS)
