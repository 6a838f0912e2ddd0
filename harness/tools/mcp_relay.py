"""Between a stdio MCP server and the harness: no message over a bound reaches the harness whole.

The MCP SDK reads a whole line before it parses it, and parsing costs about ten times the
line's size, so a server's 20 MB answer cost the harness 200 MB. This small program runs the
server (its stdin and stderr are the relay's own) and passes its stdout on line by line, reading
at most :data:`CHUNK_BYTES` at a time; a line longer than the bound is never kept: its first
and last few kilobytes are, to find the request it answers, and in its place goes a JSON-RPC
error for that request that says how long it was. Its exit code is the server's.

It also ties the server to the harness: every ``PERIOD`` seconds it looks whether its parent is
still the harness (``HARNESS``, its pid), and once it is not (the harness killed, even with
SIGKILL) it kills its own process group, itself, the server and all the server started there
with it; a server that goes on after its input closes would otherwise outlive the harness. The
MCP client starts the relay in a session of its own; started in another's group, it kills the
server alone.

It runs as a script of the standard library alone
(``python -I mcp_relay.py LIMIT HARNESS PERIOD -- argv``): it starts before any sandbox and must
not import the harness, nor anything from its folder.
"""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from typing import BinaryIO

CHUNK_BYTES = 1 << 16
EDGE_BYTES = 4096
"""How much of an oversized line's start and end is kept to find its request's id."""
_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,200}")')


def relay(source: io.BufferedIOBase, sink: BinaryIO, limit: int) -> None:
    """Copy ``source``'s lines to ``sink``; each line over ``limit`` bytes becomes an error."""
    line = bytearray()
    size, head, tail = 0, b"", b""
    while chunk := source.read1(CHUNK_BYTES):
        while chunk:
            end = chunk.find(b"\n")
            piece, chunk = (chunk, b"") if end < 0 else (chunk[: end + 1], chunk[end + 1 :])
            size += len(piece)
            if size <= limit:
                line += piece
            else:  # over the bound: from now on only the line's edges are kept
                edge = bytes(line) + piece
                head, tail = head or edge[:EDGE_BYTES], (tail + edge)[-EDGE_BYTES:]
                line.clear()
            if end < 0:
                continue
            sink.write(bytes(line) if size <= limit else refusal(head, tail, size, limit))
            sink.flush()
            line, size, head, tail = bytearray(), 0, b"", b""


def refusal(head: bytes, tail: bytes, size: int, limit: int) -> bytes:
    """The error answer that takes an oversized message's place (nothing, for a notification)."""
    found = _ID.search(head) or _ID.search(tail)
    if found is None:
        return b""
    message = {"jsonrpc": "2.0", "id": json.loads(found[1]),
               "error": {"code": -32603, "message": f"the server's answer was {size} bytes, over "
                         f"the harness's bound of {limit} bytes for one message; not read"}}  # fmt: skip
    return json.dumps(message).encode() + b"\n"


def watch(harness: int, period: float, server: subprocess.Popen[bytes]) -> None:
    """Wait until the relay's parent is no longer ``harness``, then end the server (and its
    group, where the relay leads one)."""
    while os.getppid() == harness:
        time.sleep(period)
    if os.getpgrp() == os.getpid():
        os.killpg(0, signal.SIGKILL)  # the relay with them
    else:
        server.kill()


def main(argv: list[str]) -> int:
    limit, harness, period, separator, *command = argv
    if separator != "--" or not command:
        sys.stderr.write("usage: mcp_relay.py LIMIT HARNESS PERIOD -- COMMAND...\n")
        return 2
    try:
        server = subprocess.Popen(command, stdout=subprocess.PIPE)
    except OSError as exc:
        sys.stderr.write(f"cannot start {command[0]}: {exc}\n")
        return 127
    assert server.stdout is not None
    threading.Thread(target=watch, args=(int(harness), float(period), server), daemon=True).start()
    try:
        relay(server.stdout, sys.stdout.buffer, int(limit))  # type: ignore[arg-type]
    except (BrokenPipeError, KeyboardInterrupt):
        server.kill()
    return server.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
