"""Running one command: its own process group, output to a file, a timeout and a watcher.

This is the bottom of every command the harness starts for the agent; :class:`Sandbox` decides
what to wrap the command in, this module runs it and kills it.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import select
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from harness.core.text import truncate
from harness.sandbox.command_env import safe_env

CANNOT_START = 127
"""The exit code of a command whose program could not be started (as a shell reports it)."""

_POLL_SECONDS = 0.05  # how often a running command's limits are looked at

Watch = Callable[[int], str | None]
"""Called while a command runs with the bytes of output so far; a limit's name stops it."""


@dataclass(frozen=True)
class CommandResult:
    """What a finished (or killed) command left behind."""

    exit_code: int | None  # None when it was killed at its timeout or a limit
    output: str  # stdout and stderr interleaved, already truncated
    timed_out: bool
    duration: float
    output_chars: int  # characters of output before truncation
    timeout: float  # the limit it ran under, seconds
    limit: str | None = None  # which limit killed it ("memory limit (512 MB)"), if one did

    @property
    def status(self) -> str:
        """``exit code 3``, ``timed out after 2s (...)`` or ``killed: process limit (64)``."""
        if self.timed_out:
            return f"timed out after {self.timeout:g}s (process group killed)"
        if self.limit:
            return f"killed: {self.limit} exceeded"
        return f"exit code {self.exit_code}"


def run_command(
    command: str | list[str],
    *,
    cwd: str | Path,
    timeout: float,
    env: Mapping[str, str] | None = None,
    max_output: int = 20_000,
    watch: Watch | None = None,
    explain: Callable[[int | None], str | None] | None = None,
) -> CommandResult:
    """Run ``command`` (a shell string or an argv list) in its own process group.

    Output goes to a temporary file rather than a pipe, so a child that fills a pipe cannot hang
    us and 50 MB of output costs only disk. At the timeout, or when ``watch`` names a limit,
    the whole group gets SIGKILL. ``explain`` may name the limit behind an exit code after the
    fact. A program that cannot be started is a result with exit code 127 that says why.
    ``env`` None means this process's environment with secrets scrubbed (``safe_env``).
    """
    start = time.monotonic()
    with tempfile.TemporaryFile() as sink:
        try:
            process = subprocess.Popen(
                command,
                shell=isinstance(command, str),
                cwd=cwd,
                env=dict(env) if env is not None else safe_env(),
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except (OSError, ValueError, subprocess.SubprocessError) as exc:  # no program, cwd; NUL
            program = "/bin/sh" if isinstance(command, str) else command[0]
            return cannot_start(program, exc, timeout=timeout, since=start)
        timed_out, limit = False, None
        try:
            timed_out, limit = _wait(process, sink, timeout, watch)
        finally:  # also on Ctrl-C: the command's own session must not outlive the harness
            _kill_group(process.pid)
            process.wait()
        if limit is None and not timed_out and explain is not None:
            limit = explain(process.returncode)
        output, chars = _read_bounded(sink, max_output)
    return CommandResult(
        exit_code=None if timed_out or limit else process.returncode,
        output=output,
        timed_out=timed_out,
        duration=time.monotonic() - start,
        output_chars=chars,
        timeout=timeout,
        limit=limit,
    )


def cannot_start(program: str, reason: object, *, timeout: float, since: float) -> CommandResult:
    """The result of a command whose program could not be started: exit code 127 and why."""
    message = f"cannot start {program}: {reason}"
    return CommandResult(CANNOT_START, message, False, time.monotonic() - since, len(message),
                         timeout)  # fmt: skip


def _wait(
    process: subprocess.Popen[bytes], sink: BinaryIO, timeout: float, watch: Watch | None
) -> tuple[bool, str | None]:
    """(timed out, limit hit) once the process has ended or been found over a bound."""
    deadline = time.monotonic() + timeout
    with _exit_signal(process.pid) as ended:
        while True:
            left = deadline - time.monotonic()
            ended(max(min(left, _POLL_SECONDS), 0))
            limit = watch(os.fstat(sink.fileno()).st_size) if watch is not None else None
            if limit is not None:
                return False, limit
            if process.poll() is not None:
                return False, None
            if left <= 0:
                return True, None


@contextlib.contextmanager
def _exit_signal(pid: int) -> Iterator[Callable[[float], object]]:
    """A function that waits up to some seconds for ``pid`` to end, waking the moment it does."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # no pidfd (old kernel): sleep in small steps
        yield lambda seconds: time.sleep(min(seconds, 0.005))
        return
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    try:
        yield lambda seconds: bool(poller.poll(seconds * 1000))
    finally:
        os.close(fd)


def _kill_group(pid: int) -> None:
    # Also after a normal exit: background children the command left behind must not outlive it.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


_CHUNK_BYTES = 1 << 20


def _read_bounded(sink: BinaryIO, limit: int) -> tuple[str, int]:
    """The output as at most ``limit`` characters (head and tail), and its size in characters.

    Decoded in chunks, keeping only the first and the last ``limit`` characters, so a huge
    output never sits in memory whole.
    """
    sink.seek(0)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    head, tail, size = "", "", 0
    while True:
        chunk = sink.read(_CHUNK_BYTES)
        text = decoder.decode(chunk, final=not chunk)
        size += len(text)
        if len(head) < limit:
            head, text = head + text[: limit - len(head)], text[limit - len(head) :]
        joined = tail + text
        tail = joined[max(len(joined) - limit, 0) :]
        if not chunk:
            break
    # head and tail are disjoint: together the whole output, or its two ends around a gap.
    return truncate(head + tail, limit, total=size), size
