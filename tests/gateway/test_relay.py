"""The relay a sandbox runs: the agent's 127.0.0.1 port carried to the gateway's unix socket."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from harness import ScriptedModel
from harness.gateway import Gateway
from harness.gateway.relay import _accept

TOKEN = "harness-relay-token"
LONG = "x" * 300_000
"""An answer longer than one read of the relay: carried on in pieces."""

CLIENT = """
import http.client, json, sys, time
port = int(sys.argv[1])
for _ in range(100):  # the relay listens as its child starts
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.connect()
        break
    except OSError:
        time.sleep(0.05)
body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
for _ in range(2):  # one connection kept alive
    connection.request("POST", "/v1/chat/completions", body, {"x-api-key": sys.argv[2]})
    answer = json.loads(connection.getresponse().read())
    print(len(answer["choices"][0]["message"]["content"]))
sys.exit(7)
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_the_relay_carries_whole_answers_and_ends_with_its_child_s_code(tmp_path: Path) -> None:
    path = tmp_path / "gateway.sock"
    port = free_port()
    relay = [sys.executable, "-m", "harness.gateway.relay", str(path), str(port), "--"]
    with Gateway(ScriptedModel([LONG, "short"]), token=TOKEN, socket_path=path) as gateway:
        child = [sys.executable, "-c", CLIENT, str(port), TOKEN]
        done = subprocess.run([*relay, *child], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout.split()) == (7, [str(len(LONG)), "5"]), done.stderr
    assert gateway.requests == 2


def test_the_relay_sends_each_piece_at_once() -> None:
    """No piece waits for the agent's acknowledgement of the one before (which it delays)."""
    with (
        socket.create_server(("127.0.0.1", 0)) as listener,
        socket.create_connection(listener.getsockname()),
        _accept(listener) as accepted,
    ):
        assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
