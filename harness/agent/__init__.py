"""The inner loop: one tool-calling agent session, its compaction, transcript and ledger."""

from harness.agent.agent import Agent, AgentRun, AgentStop

__all__ = ["Agent", "AgentRun", "AgentStop"]
