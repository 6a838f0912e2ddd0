"""A trajectory in the form SWE-agent writes and its inspectors read (``<instance_id>.traj``).

One JSON object: ``trajectory`` (one entry per tool call: the model's ``thought`` and whole
``response``, the ``action``, the ``observation``, its ``execution_time``), ``history`` (the last
author request as sent, then its reply), and ``info`` (``submission``: the patch,
``exit_status``, ``model_stats``: cost, tokens and calls). Every round's author steps are in
order; the critic's calls are not actions, and are left out.
"""

from __future__ import annotations

from typing import Any

from harness.core.trajectory_schema import ModelStep, RecordedReply, ToolStep
from harness.core.usage import Usage
from harness.observe.trajectory import Trajectory


def swe_agent_traj(trajectory: Trajectory, *, submission: str, exit_status: str) -> dict[str, Any]:
    """``trajectory`` as a SWE-agent ``.traj`` object, with the run's patch and how it ended."""
    steps: list[dict[str, Any]] = []
    replies: dict[tuple[int | None, int | None, str], RecordedReply] = {}
    usage = Usage()
    for record in trajectory.records:
        if isinstance(record, ModelStep):
            usage += record.usage
            for call in record.reply.tool_calls:
                replies[(record.round, record.session, call.id)] = record.reply
        elif isinstance(record, ToolStep):
            reply = replies.get((record.round, record.session, record.call_id))
            thought = reply.content or "" if reply is not None else ""
            action = f"{record.name} {record.arguments}"
            steps.append(
                {
                    "thought": thought,
                    "action": action,
                    "response": f"{thought}\n\n{action}".strip(),
                    "observation": trajectory.text(record.observation),
                    "execution_time": record.duration,
                    "state": {"round": record.round, "step": record.step},
                }
            )
    return {
        "environment": "harness",
        "trajectory": steps,
        "history": _history(trajectory),
        "info": {
            "submission": submission,
            "exit_status": exit_status,
            "model_stats": {
                "instance_cost": usage.cost_usd,
                "tokens_sent": usage.prompt_tokens,
                "tokens_received": usage.completion_tokens,
                "api_calls": usage.calls,
            },
        },
    }


def _history(trajectory: Trajectory) -> list[dict[str, Any]]:
    """The last author request as it was sent, and the reply to it."""
    last = None
    for call in trajectory.calls():
        if call.step.role == "author":
            last = call
    if last is None:
        return []
    reply = last.step.reply
    answer: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        answer["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in reply.tool_calls
        ]
    return [*last.messages, answer]
