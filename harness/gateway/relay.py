"""The gateway's relay inside a sandbox: 127.0.0.1:PORT there, to the gateway's unix socket.

A sandbox with a network namespace of its own has only its own loopback, and agents speak to
``http://127.0.0.1:PORT``. The relay listens there, runs the agent's command as its child,
carries every connection's bytes to the socket bound into the sandbox and back, and ends with
the child's exit code. It imports nothing but the standard library:

    python -m harness.gateway.relay SOCKET PORT -- COMMAND...
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading

MAX_CONNECTIONS = 32
"""Connections carried at once; one more waits for a place (the gateway bounds them too)."""


def _pipe(source: socket.socket, target: socket.socket) -> None:
    """Copy ``source`` to ``target`` until ``source`` ends, then end ``target``'s writing."""
    with contextlib.suppress(OSError):
        while data := source.recv(1 << 16):
            target.sendall(data)
    with contextlib.suppress(OSError):
        target.shutdown(socket.SHUT_WR)


def _carry(client: socket.socket, socket_path: str, slots: threading.Semaphore) -> None:
    try:
        with client, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as upstream:
            upstream.connect(socket_path)
            back = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
            back.start()
            _pipe(client, upstream)
            back.join()
    except OSError:
        pass
    finally:
        slots.release()


def _accept(listener: socket.socket) -> socket.socket:
    """The next connection, set to send each piece it is given at once: held back until the
    agent acknowledged the piece before (TCP's default), the end of a long answer would wait
    for that acknowledgement, which the agent delays (some 40 ms)."""
    client, _ = listener.accept()
    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return client


def _serve(listener: socket.socket, socket_path: str) -> None:
    slots = threading.Semaphore(MAX_CONNECTIONS)
    while True:
        slots.acquire()
        try:
            client = _accept(listener)
        except OSError:
            return
        threading.Thread(target=_carry, args=(client, socket_path, slots), daemon=True).start()


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: python -m harness.gateway.relay SOCKET PORT -- COMMAND...", file=sys.stderr)
        return 2
    socket_path, port, command = argv[0], int(argv[1]), argv[3:]
    listener = socket.create_server(("127.0.0.1", port), backlog=64)  # SO_REUSEADDR set
    threading.Thread(target=_serve, args=(listener, socket_path), daemon=True).start()
    try:
        child = subprocess.Popen(command)
    except OSError as exc:
        print(f"cannot start {command[0]}: {exc}", file=sys.stderr)
        return 127
    return child.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
