"""Claude Code as a round's session: ``[agent] runner = "claude-code"`` (``claude -p``).

Claude Code runs non-interactively (``-p``, the task on its standard input, its events as JSON
lines on standard output), with its tools allowed without asking (``bypassPermissions``: the
harness's sandbox is the confinement; ``IS_SANDBOX=1`` lets it start so as root) and its model
requests sent to the harness's gateway in Anthropic's Messages format, every model slot (the
main one, the small and fast one, subagents') naming the run's model. What it would send beyond
the model requests (telemetry, error reports, update checks, other non-essential traffic) is
turned off, and so are its retries: a request the gateway refuses ends the session at once. Its
settings are only those of its private ``HOME`` (none of the repository's), no MCP server but
none, and its commits and pushes are denied (the harness commits the round).
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.gateway.gateway import GatewayAddress
from harness.runners.base import ExternalRunner, Invocation, Least

VERSION = "2.1.332"
"""The version the runner is tested with."""
TOOLS = "Bash,Edit,Read,Write"
"""Claude Code's own tools a session has: commands, and reading and writing files."""
DENIED = ("Bash(git commit:*)", "Bash(git push:*)")
OFF = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_MAX_RETRIES": "0",
    "IS_SANDBOX": "1",
}
"""Unattended and offline: only model requests leave it, and a refused one is not sent again."""
MODEL_SLOTS = (
    "ANTHROPIC_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL",
    "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL",
    "CLAUDE_CODE_SUBAGENT_MODEL",
)


class ClaudeCodeRunner(ExternalRunner):
    """Runs ``claude -p`` on each round's task; see the module's doc."""

    name = "claude-code"
    executable = "claude"
    install = (
        f"npm install --prefix /opt/harness-agents/claude-code @anthropic-ai/claude-code@{VERSION}"
    )
    wire = "anthropic"
    least = Least("Claude Code", (2, 0, 64), "it has no --tools option")

    def invocation(
        self, task: str, gateway: GatewayAddress, home: Path, workspace: Path
    ) -> Invocation:
        argv = [
            self.program, "-p", "--output-format", "stream-json", "--verbose",
            "--model", gateway.model, "--permission-mode", "bypassPermissions",
            "--tools", TOOLS, "--disallowedTools", *DENIED,
            "--setting-sources", "user", "--strict-mcp-config", "--no-session-persistence",
        ]  # fmt: skip
        env = {
            "ANTHROPIC_BASE_URL": gateway.base_url,
            "ANTHROPIC_API_KEY": gateway.token,
            **dict.fromkeys(MODEL_SLOTS, gateway.model),
            **OFF,
        }
        return Invocation(argv=argv, env=env, stdin=task)

    def final_message(self, stdout: str, home: Path) -> str:
        """The ``result`` of its last result event, else the text of its last assistant turn."""
        return final_of_stream(stdout)


def final_of_stream(stdout: str) -> str:
    """The answer in Claude Code's ``stream-json`` output (one JSON event a line)."""
    result: str | None = None
    answer = ""
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        if event.get("type") == "result" and isinstance(event.get("result"), str):
            result = event["result"].strip()
        elif event.get("type") == "assistant":
            answer = _text_of(event.get("message")) or answer
    return answer if result is None else result


def _text_of(message: object) -> str:
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        return ""
    parts = [
        block["text"]
        for block in message["content"]
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ]
    return "\n".join(parts).strip()
