"""MCP servers as tools: start them, list their tools, call them from the synchronous agent.

``with mcp_tools(servers) as tools:`` starts every server (a stdio command, or a streamable HTTP
URL), and yields its tools as :class:`Tool` objects named ``mcp__<server>__<tool>`` with the
server's JSON schemas passed through. Leaving the block stops the servers.

The agent is synchronous and the SDK is asynchronous, so the connections live on an event loop
in one background thread, each server in its own task; a call waits for its answer at most the
server's ``call_timeout``. What the model should see (a tool's error, a server that died, a call
that timed out) is an error observation; a server that cannot start is a :class:`ConfigError`.

Requires the ``mcp`` extra (``pip install 'harness[mcp]'``); nothing here imports the SDK until a
server is started.
"""

from __future__ import annotations

import asyncio
import tempfile
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from harness.core import held_folders
from harness.core.errors import ConfigError, MissingExtra, ToolError
from harness.core.redact import Redactor, redact_strings
from harness.core.text import truncate
from harness.sandbox import Sandbox, default_sandbox
from harness.tools.mcp_results import observation
from harness.tools.mcp_server import McpServer, launch_parameters, select_tools, tool_name
from harness.tools.toolkit import Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.types import CallToolResult
    from mcp.types import Tool as McpToolSpec

__all__ = ["McpServer", "McpTool", "launch_parameters", "mcp_tools"]

_STDERR_SHOWN = 2_000
_STOP_GRACE = 10.0  # seconds to wait for the servers to shut down when the block ends
_ANSWER_GRACE = 5.0  # beyond call_timeout, in case the SDK's own timeout does not fire


@contextmanager
def mcp_tools(
    servers: Sequence[McpServer], *, sandbox: Sandbox | None = None
) -> Iterator[list[Tool]]:
    """Start ``servers`` and yield their tools; stop the servers when the block ends.

    Stdio servers run inside ``sandbox`` (default: the ``auto`` sandbox), like the agent's
    commands.
    """
    names = [server.name for server in servers]
    if duplicated := sorted({name for name in names if names.count(name) > 1}):
        raise ConfigError(f"mcp: two servers are named {duplicated[0]!r}")
    if not servers:
        yield []
        return
    try:
        import mcp  # noqa: F401 - fail early with the extra's name
    except ImportError as exc:
        raise MissingExtra("mcp", "the MCP SDK", "mcp") from exc
    runner = _Runner()
    connections: list[_Connection] = []
    try:
        tools: list[Tool] = []
        for server in servers:
            connection = _Connection(server, runner, sandbox or default_sandbox())
            connections.append(connection)
            tools.extend(connection.start())
        yield tools
    finally:
        for connection in connections:
            connection.stop()
        runner.close()


class _Runner:
    """An asyncio event loop on a daemon thread: the home of every connection's task."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="mcp", daemon=True)
        self.thread.start()

    def submit(self, coroutine: Any) -> Future[Any]:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(_STOP_GRACE)
        if not self.thread.is_alive():
            self.loop.close()


class _Connection:
    """One server's session, kept open by a task on the runner's loop until :meth:`stop`."""

    def __init__(self, server: McpServer, runner: _Runner, sandbox: Sandbox) -> None:
        self.server = server
        self.sandbox = sandbox
        self.runner = runner
        self.redact = server.redact or Redactor().redact_text
        self.session: ClientSession | None = None
        self.gone: str | None = None  # why the server is no longer there
        # the server's stderr, quoted in errors; closed by stop()
        self.stderr: TextIO = tempfile.TemporaryFile(  # noqa: SIM115
            "w+", encoding="utf-8", errors="replace"
        )
        self.scratch = held_folders.make(f"harness-mcp-{server.name}-")
        """The server's own folder, the one it may write in; removed by :meth:`stop`."""
        self._ready: Future[list[McpToolSpec]] = Future()
        self._stopping: asyncio.Event | None = None
        self._task: Future[None] | None = None

    def start(self) -> list[Tool]:
        server = self.server
        self._task = self.runner.submit(self._serve())
        try:
            specs = self._ready.result(server.startup_timeout)
        except FutureTimeout:
            problem = f"did not start within {server.startup_timeout:g}s (startup_timeout)"
        except Exception as exc:
            problem = f"could not start: {_describe(exc)}"
        else:
            return [McpTool(self, spec) for spec in select_tools(server, specs)]
        problem += self._stderr_tail()
        self.stop()
        raise ConfigError(f"mcp {server.name!r}: {problem}")

    async def _serve(self) -> None:
        from mcp import ClientSession

        self._stopping = asyncio.Event()
        try:
            async with _transport(self.server, self.sandbox, self.stderr, self.scratch) as streams:
                read, write = streams[0], streams[1]
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    specs = await _list_tools(session)
                    self.session = session
                    self._ready.set_result(specs)
                    await self._stopping.wait()
        except BaseException as exc:  # recorded: start() raises it, or calls report it
            if not self._ready.done():
                self._ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(exc))
            self.gone = _describe(exc)
            if not isinstance(exc, Exception):
                raise
        finally:
            self.session = None
            self.gone = self.gone or "the session ended"

    def call(self, tool_name: str, arguments: dict[str, Any]) -> CallToolResult:
        session, server = self.session, self.server
        if session is None:
            raise ToolError(
                f"mcp server {server.name!r} is not running ({self.gone}){self._stderr_tail()}"
            )
        arguments = redact_strings(arguments, self.redact)  # what leaves the process
        pending = self.runner.submit(
            session.call_tool(tool_name, arguments, read_timeout_seconds=server.call_timeout)
        )
        try:
            return pending.result(server.call_timeout + _ANSWER_GRACE)
        except FutureTimeout:
            pending.cancel()
            raise ToolError(self._timed_out(tool_name)) from None
        except Exception as exc:
            if _connection_closed(exc):
                self.session, self.gone = None, "its connection closed"
            if self.session is None:
                raise ToolError(
                    f"mcp server {server.name!r} stopped during {tool_name} "
                    f"({_describe(exc)}){self._stderr_tail()}"
                ) from None
            if _is_timeout(exc):
                raise ToolError(self._timed_out(tool_name)) from None
            raise ToolError(
                f"mcp server {server.name!r}: {tool_name} failed: {_describe(exc)}"
            ) from None

    def stop(self) -> None:
        try:
            self._stop()
        finally:
            self.stderr.close()
            held_folders.remove(self.scratch)

    def _stop(self) -> None:
        if self._task is None or self._task.done():
            return
        stopping = self._stopping
        if stopping is not None and self.session is not None:
            self.runner.loop.call_soon_threadsafe(stopping.set)
        else:
            self._task.cancel()
        try:
            self._task.result(_STOP_GRACE)
        except Exception:  # noqa: BLE001, S110 - shutting down: its failure was recorded in .gone
            self._task.cancel()

    def _timed_out(self, tool_name: str) -> str:
        return (
            f"mcp server {self.server.name!r} did not answer {tool_name} within "
            f"{self.server.call_timeout:g}s (call_timeout)"
        )

    def _stderr_tail(self) -> str:
        try:
            self.stderr.flush()
            self.stderr.seek(0)
            text = self.stderr.read().strip()
        except (OSError, ValueError):
            return ""
        return f"; its stderr ends:\n{truncate(text, _STDERR_SHOWN, head_share=0)}" if text else ""


class McpTool(Tool):
    """A server's tool: its schema passed through, its calls sent to the server."""

    def __init__(self, connection: _Connection, spec: McpToolSpec) -> None:
        self.connection = connection
        self.remote_name = spec.name
        self.name = tool_name(connection.server.name, spec.name)
        self.description = spec.description or spec.title or spec.name
        self.parameters = dict(spec.input_schema) or {"type": "object", "properties": {}}
        self.signature = f"{self.name}(<see schema>)"
        self._context_param = None

    def _validate(self, arguments: object) -> dict[str, Any]:
        return self._object(arguments)  # the server checks them against its schema

    def _call(self, kwargs: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return observation(self.connection.call(self.remote_name, kwargs), ctx.max_output_chars)


def _transport(server: McpServer, sandbox: Sandbox, stderr: TextIO, scratch: Path) -> Any:
    if server.url:
        from mcp.client.streamable_http import streamable_http_client

        return streamable_http_client(server.url)
    from mcp import stdio_client

    return stdio_client(launch_parameters(server, sandbox, scratch), errlog=stderr)


async def _list_tools(session: ClientSession) -> list[McpToolSpec]:
    from mcp.types import PaginatedRequestParams

    listed = await session.list_tools()
    specs = list(listed.tools)
    while listed.next_cursor:
        listed = await session.list_tools(params=PaginatedRequestParams(cursor=listed.next_cursor))
        specs.extend(listed.tools)
    return specs


def _describe(exc: BaseException) -> str:
    """The innermost messages of an exception (task groups wrap them in ExceptionGroups)."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(inner) for inner in exc.exceptions)
    text = str(exc).strip() or type(exc).__name__
    return text if type(exc).__name__ in text else f"{type(exc).__name__}: {text}"


def _connection_closed(exc: BaseException) -> bool:
    from mcp.types import CONNECTION_CLOSED

    return getattr(getattr(exc, "error", None), "code", None) == CONNECTION_CLOSED


def _is_timeout(exc: BaseException) -> bool:
    return isinstance(exc, TimeoutError) or "timed out" in str(exc).lower()
