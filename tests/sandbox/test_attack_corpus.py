"""The attack corpus against the bwrap backend (no escapes) and against none (what it lets by).

Every attempt is made for real: tool calls with hostile paths, shell commands reading the
harness's environment, writing outside or into its state, connecting to a server on
127.0.0.1, leaving survivors behind, exhausting processes, disk and memory, planting git
programs, compiling regex bombs.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from harness.workspace.git_cmd import status
from tests.sandbox.corpus import (
    ENV_CANARIES,
    LEAKS,
    World,
    file_tool_attempts,
    make_world,
    shell_commands,
    shell_escaped,
    still_growing,
    survivor_command,
)

AT_FDCWD, RENAME_EXCHANGE = -100, 2


def run_corpus(world: World, *, host_safe: bool = False) -> tuple[int, Counter[str], list[str]]:
    """(attempts, escapes per class, the escaped attempts' names)."""
    attempts, escapes, names = 0, Counter[str](), []

    def record(kind: str, name: str, escaped: bool) -> None:
        nonlocal attempts
        attempts += 1
        if escaped:
            escapes[kind] += 1
            names.append(f"{kind}: {name}")

    for kind, command in shell_commands(
        world, host_safe=host_safe
    ):  # shell first: it makes links the tools try
        before, accepted = world.snapshot(), len(world.accepted)
        result = world.call("run_shell", command=command, timeout=10)
        record(kind, command, shell_escaped(world, command, result, before, accepted))
        if "fsmonitor" in command or "hooks" in command:  # then the harness's own git runs
            before = world.snapshot()
            status(world.ws)
            record("git: planted programs", f"harness git status after {command}",
                   world.snapshot() != before)  # fmt: skip
    for kind, name, attempt in file_tool_attempts(world):
        before = world.snapshot()
        output = attempt().output
        leaked = any(leak in output and leak not in name for leak in LEAKS)  # not the path echoed
        record(kind, name[:80], leaked or world.snapshot() != before)
    for tag, tail, timeout in (("t", "sleep 100", 1.0), ("n", "echo started", 10.0)):
        world.call("run_shell", command=survivor_command(tag, tail), timeout=timeout)
        record("processes: setsid/nohup/double-fork survivors", tag,
               bool(still_growing(world.ws, tag)))  # fmt: skip
        if world.ctx.sandbox is not None and world.ctx.sandbox.backend == "none":
            _kill_survivors(world.ws, tag)  # elsewhere the pids are the sandbox's, not this host's
    for name, command, limit in (
        ("fork storm", "for i in $(seq 500); do sleep 20 & done; wait", "process limit"),
        ("disk fill", "yes > fill.txt", "file size limit"),
        ("memory bomb", "python3 -c 'x = bytearray(2 << 30)'", "memory limit"),
        ("output flood", "yes", "output limit"),
    ):
        result = world.call("run_shell", command=command, timeout=60)
        record("limits", name, not result.output.startswith(f"[killed: {limit}"))
    for pattern in ("a{1000000000}", "(a{1000}){1000}", "((x{99}){99}){99}"):
        started = time.monotonic()  # RE2 refuses a bomb or matches in linear time: within 30 s
        world.call("search", pattern=pattern)
        record("search: regex bomb", pattern, time.monotonic() - started > 30)
    return attempts, escapes, names


def _kill_survivors(ws: Path, tag: str) -> None:
    """Backend none leaves them running: kill them by their (host) pids."""
    for pid_file in ws.glob(f"{tag}-*.beat.pid"):
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)


@pytest.fixture
def canaries(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in ENV_CANARIES.items():
        monkeypatch.setenv(name, value)


@pytest.mark.slow
@pytest.mark.usefixtures("bwrap_ok", "canaries")
def test_no_attempt_escapes_the_bwrap_sandbox(tmp_path: Path) -> None:
    attempts, escapes, names = run_corpus(make_world(tmp_path, "bwrap"))

    assert attempts >= 300
    assert names == []
    assert sum(escapes.values()) == 0


@pytest.mark.slow
@pytest.mark.usefixtures("canaries")
def test_backend_none_lets_through_what_its_warning_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    attempts, escapes, names = run_corpus(make_world(tmp_path, "none"), host_safe=True)
    with capsys.disabled():
        print(f"\nbackend none: {sum(escapes.values())} of {attempts} attempts got through")
        for kind, count in sorted(escapes.items()):
            print(f"  {count:4} {kind}")

    # The in-process protections hold whatever the backend ...
    for kind in ("file tools: path tricks", "git: planted programs", "search: regex bomb"):
        assert escapes[kind] == 0, [n for n in names if n.startswith(kind)]
    # ... while commands run as the harness's user, with its files and network in reach.
    # (The variables are allow-listed whatever the backend; what leaks is the files outside. A real
    # harness's keys would also show in /proc/<its pid>/environ, which shows a process's start-up
    # environment: the canaries here are set after this test process started.)
    assert escapes["shell: environment and files outside"] >= 2
    assert escapes["shell: writes outside and to harness state"] >= 10
    assert escapes["shell: network"] >= 3


@pytest.mark.slow
def test_a_symlink_swap_race_never_lands_a_write_outside(tmp_path: Path) -> None:
    """A folder on the checked path turns into a symlink leading outside, over and over.

    The race is against the in-process file tools, so the backend does not matter.
    """
    world = make_world(tmp_path, "none")
    folder, other = world.ws / "d", world.ws / "d.other"
    folder.mkdir()
    other.symlink_to(world.outside)
    libc = ctypes.CDLL(None, use_errno=True)
    stop = threading.Event()

    def swapper() -> None:  # d is a folder, then a symlink leading outside, then a folder ...
        names = (bytes(folder), bytes(other))
        while not stop.is_set():
            libc.renameat2(AT_FDCWD, names[0], AT_FDCWD, names[1], RENAME_EXCHANGE)

    thread = threading.Thread(target=swapper)
    thread.start()
    outcomes = Counter[str]()
    try:
        for index in range(10_000):
            output = world.call("write_file", path=f"d/f{index % 50}.txt", content="raced\n").output
            outcomes["written" if output.startswith(("created", "overwrote")) else "refused"] += 1
    finally:
        stop.set()
        thread.join()

    landed = [p.name for p in world.outside.iterdir() if p.name.startswith("f")]
    assert landed == []
    assert outcomes["written"] > 100  # the race was run: many writes went in while d was a folder
    assert outcomes["refused"] > 100  # and many met the symlink
    assert sum(outcomes.values()) == 10_000
