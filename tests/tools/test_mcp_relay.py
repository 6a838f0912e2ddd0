"""A stdio server's messages reach the harness only under a bound: the relay between them."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from harness.sandbox import Sandbox
from harness.tools import ToolContext
from harness.tools.mcp import McpServer, mcp_tools
from harness.tools.mcp_relay import CHUNK_BYTES, relay
from harness.tools.mcp_server import MAX_MESSAGE_BYTES

BIG_SERVER = """
import sys
from mcp.server.mcpserver import MCPServer

app = MCPServer("big")

@app.tool()
def answer(megabytes: float) -> str:
    \"\"\"An answer of about this many megabytes.\"\"\"
    return "head" + "x" * int(megabytes * 2**20) + "tail"

app.run()
"""


def relayed(data: bytes, limit: int) -> list[bytes]:
    sink = io.BytesIO()
    relay(io.BufferedReader(io.BytesIO(data), CHUNK_BYTES), sink, limit)  # type: ignore[arg-type]
    return sink.getvalue().splitlines(keepends=True)


def response(request: int | str, size: int) -> bytes:
    """A JSON-RPC answer to ``request`` of exactly ``size`` bytes, its newline included."""
    start = json.dumps({"jsonrpc": "2.0", "id": request, "result": {"text": ""}})[:-3]
    return (start + "x" * (size - len(start) - 4) + '"}}\n').encode()


def test_lines_up_to_the_bound_pass_whole_and_one_byte_more_is_an_error_for_its_request() -> None:
    exact, over = response(7, 1000), response("req-8", 1001)
    assert (len(exact), len(over)) == (1000, 1001)

    lines = relayed(exact + over + b'{"jsonrpc": "2.0", "method": "ping"}\n', limit=1000)

    assert lines[0] == exact
    error = json.loads(lines[1])
    assert error["id"] == "req-8"
    assert error["error"]["message"] == (
        "the server's answer was 1001 bytes, over the harness's bound of 1000 bytes for one "
        "message; not read"
    )
    assert "result" not in error
    assert lines[2] == b'{"jsonrpc": "2.0", "method": "ping"}\n'  # the next message goes on
    assert len(lines) == 3


def test_an_oversized_message_with_no_request_is_dropped_and_chunks_join_to_lines() -> None:
    notice = (
        b'{"jsonrpc": "2.0", "method": "notifications/message", "params": "'
        + b"y" * (5 * CHUNK_BYTES)
        + b'"}\n'
    )
    long_ok = response(3, 3 * CHUNK_BYTES)  # several reads make one line

    lines = relayed(notice + long_ok, limit=4 * CHUNK_BYTES)

    assert lines == [long_ok]


def test_the_id_is_found_when_it_comes_after_the_huge_part() -> None:
    message = b'{"jsonrpc": "2.0", "result": {"t": "' + b"z" * 100_000 + b'"}, "id": 42}\n'

    (line,) = relayed(message, limit=50_000)

    assert json.loads(line)["id"] == 42


@pytest.fixture
def big_server(tmp_path: Path) -> McpServer:
    (tmp_path / "big.py").write_text(BIG_SERVER)
    return McpServer("big", command=[sys.executable, str(tmp_path / "big.py")], cwd=tmp_path)


def test_a_result_over_the_bound_is_an_error_observation_and_the_server_goes_on(
    big_server: McpServer, tmp_path: Path
) -> None:
    """Before, a 20 MB answer was read whole (about 200 MB of the harness's memory) and cut
    only afterwards; now the harness never reads more than the bound of it."""
    ctx = ToolContext(workspace=tmp_path, max_output_chars=2_000)
    with mcp_tools([big_server], sandbox=Sandbox("none")) as (answer,):
        too_big = answer.run({"megabytes": 20}, ctx)
        small = answer.run({"megabytes": 1}, ctx)

    assert too_big.is_error
    assert f"over the harness's bound of {MAX_MESSAGE_BYTES} bytes" in too_big.output
    assert "xxxx" not in too_big.output
    assert not small.is_error  # within the bound: read, then cut to the observation's size
    assert small.output.startswith("head")
    assert small.output.endswith("tail")
    assert len(small.output) < 3_000
