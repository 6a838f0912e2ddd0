"""An MCP server's declaration, how a stdio server is started, and which of its tools the agent sees.

:mod:`harness.tools.mcp` runs the servers; nothing here imports the SDK until a stdio server is
started.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field

from harness.core.errors import ConfigError
from harness.core.section import Section, check_field
from harness.sandbox import Sandbox
from harness.sandbox.limits import LIFELINE_SECONDS

if TYPE_CHECKING:
    from mcp import StdioServerParameters
    from mcp.types import Tool as McpToolSpec

PREFIX = "mcp__"
SCRATCH_VARIABLE = "HARNESS_SCRATCH"
"""Names a stdio server's scratch folder to it: the one place it may write."""
MAX_MESSAGE_BYTES = 4 << 20
"""The longest message of a stdio server's the harness reads; a longer answer is an error."""
_BAD_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
MCP_NAME = r"[A-Za-z0-9][A-Za-z0-9-]*(_[A-Za-z0-9-]+)*"
"""A server's name: letters, digits, '-' and single '_' (its tools are mcp__<name>__<tool>)."""
STARTUP_SECONDS = 30.0
"""How long a server may take to start, seconds, unless ``startup_timeout`` says otherwise."""
CALL_SECONDS = 60.0
"""How long one tool call may take, seconds, unless ``call_timeout`` says otherwise."""


class McpConfig(Section):
    """One ``[[mcp]]`` server: ``command`` (stdio) or ``url`` (streamable HTTP)."""

    name: str = Field(pattern=rf"^{MCP_NAME}$")
    command: list[str] | None = Field(None, min_length=1)
    url: str | None = Field(None, pattern=r"^https?://")
    env: dict[str, str] = {}
    cwd: str | None = None
    allow: list[str] | None = None
    deny: list[str] = []
    startup_timeout: float = Field(STARTUP_SECONDS, gt=0, le=600)
    call_timeout: float = Field(CALL_SECONDS, gt=0, le=3600)


@dataclass(frozen=True)
class McpServer:
    """One MCP server: ``command`` (stdio, with ``env`` and ``cwd``) or ``url`` (streamable HTTP).

    ``allow`` and ``deny`` are glob patterns over the server's own tool names: the agent sees the
    tools that match ``allow`` (all when it is None) and no pattern of ``deny``. Every call's
    arguments pass ``redact`` before they are sent (the run's outbound redactor; None: the
    environment's secrets).
    """

    name: str
    command: Sequence[str] = ()
    url: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    allow: Sequence[str] | None = None
    deny: Sequence[str] = ()
    startup_timeout: float = STARTUP_SECONDS
    call_timeout: float = CALL_SECONDS
    redact: Callable[[str], str] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not re.fullmatch(MCP_NAME, self.name):
            raise ConfigError(
                f"mcp name {self.name!r}: use letters, digits, '-' and single '_' "
                "(tools are named mcp__<name>__<tool>)"
            )
        if bool(self.command) == bool(self.url):
            raise ConfigError(f"mcp {self.name!r}: give either command or url, not both or neither")
        for key in ("startup_timeout", "call_timeout"):
            check_field(McpConfig, key, getattr(self, key), name=f"mcp {self.name!r}: {key}")


def launch_parameters(server: McpServer, sandbox: Sandbox, scratch: Path) -> StdioServerParameters:
    """How a stdio server is started: inside ``sandbox``, the one place its command line is decided.

    The server runs in its ``cwd`` (default: the current folder), shown read-only, and may write
    only in ``scratch``, a folder of its own named to it as ``HARNESS_SCRATCH`` (never the loop's
    folder, where loop.toml and the harness's inboxes lie). It gets the sandbox's allow-listed
    environment plus ``server.env``, never the harness's own environment (which may hold API
    keys), and the network only when the sandbox allows it. Its stdout reaches the harness
    through :mod:`harness.tools.mcp_relay`, so no message over :data:`MAX_MESSAGE_BYTES` is read,
    and the relay ends it once this process is gone.
    """
    from mcp import StdioServerParameters

    cwd = Path(server.cwd or Path.cwd()).absolute()
    # no watcher of the sandbox's: the relay ends the server with the harness
    argv, env = sandbox.wrap(server.command, cwd=cwd, workspace=scratch, readonly=[cwd],
                             env={**server.env, SCRATCH_VARIABLE: str(scratch)},
                             lifeline=False)  # fmt: skip
    relay = [
        "-I", str(Path(__file__).with_name("mcp_relay.py")), str(MAX_MESSAGE_BYTES),
        str(os.getpid()), str(LIFELINE_SECONDS), "--",
    ]  # fmt: skip
    return StdioServerParameters(command=sys.executable, args=[*relay, *argv], env=env, cwd=cwd)


def tool_name(server: str, remote: str) -> str:
    """``mcp__<server>__<tool>``, characters a model API refuses replaced by ``_``."""
    name = f"{PREFIX}{server}__{_BAD_NAME_CHARS.sub('_', remote)}"
    if len(name) > 64:
        raise ConfigError(
            f"mcp {server!r}: tool {remote!r} makes the name {name!r}, longer than 64 characters; "
            "shorten the server's name or leave the tool out with deny"
        )
    return name


def select_tools(server: McpServer, specs: list[McpToolSpec]) -> list[McpToolSpec]:
    """The tools ``allow`` and ``deny`` let through; a pattern that matches nothing is an error."""
    names = [spec.name for spec in specs]
    for key, patterns in (("allow", server.allow or ()), ("deny", server.deny)):
        for pattern in patterns:
            if not any(fnmatchcase(name, pattern) for name in names):
                raise ConfigError(
                    f"mcp {server.name!r}: {key} pattern {pattern!r} matches none of its tools "
                    f"({', '.join(names) or 'it has none'})"
                )
    return [
        spec
        for spec in specs
        if (server.allow is None or any(fnmatchcase(spec.name, p) for p in server.allow))
        and not any(fnmatchcase(spec.name, p) for p in server.deny)
    ]
