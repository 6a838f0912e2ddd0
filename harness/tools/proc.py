"""Running commands: process-group timeouts, scrubbed environments, bounded output."""

from __future__ import annotations

import codecs
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from harness.core.redact import SECRET_NAME
from harness.core.text import truncate

CANNOT_START = 127
"""The exit code of a command whose program could not be started (as a shell reports it)."""


def safe_env(
    base: Mapping[str, str] | None = None, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """``base`` (default: this process's environment) without API keys and other secrets.

    The directory of the Python running harness comes first on ``PATH``, so that ``python``,
    ``python -m pytest`` or ``ruff`` in a gate or a shell command find the same environment
    even when its virtual environment was never activated.
    """
    env = {
        k: v
        for k, v in (os.environ if base is None else base).items()
        if not SECRET_NAME.search(k)  # the same names the event log redacts
    }
    env.update(extra or {})
    bin_dir = os.path.dirname(sys.executable)
    path = env.get("PATH", os.defpath)
    if bin_dir and path.split(os.pathsep)[0] != bin_dir:
        env["PATH"] = bin_dir + os.pathsep + path if path else bin_dir
    return env


@dataclass(frozen=True)
class CommandResult:
    """What a finished (or killed) command left behind."""

    exit_code: int | None  # None when it was killed at its timeout
    output: str  # stdout and stderr interleaved, already truncated
    timed_out: bool
    duration: float
    output_chars: int  # characters of output before truncation
    timeout: float  # the limit it ran under, seconds

    @property
    def status(self) -> str:
        """``exit code 3``, or ``timed out after 2s (process group killed)``."""
        if self.timed_out:
            return f"timed out after {self.timeout:g}s (process group killed)"
        return f"exit code {self.exit_code}"


def run_command(
    command: str | list[str],
    *,
    cwd: str | Path,
    timeout: float,
    env: Mapping[str, str] | None = None,
    max_output: int = 20_000,
) -> CommandResult:
    """Run ``command`` (a shell string or an argv list) in its own process group.

    Output goes to a temporary file rather than a pipe, so a child that fills a pipe cannot hang
    us and 50 MB of output costs only disk. At the timeout the whole group gets SIGKILL.
    A program that cannot be started is a result with exit code 127 that says why.
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
        except OSError as exc:  # a missing or non-executable program, a missing cwd
            program = "/bin/sh" if isinstance(command, str) else command[0]
            message = f"cannot start {program}: {exc}"
            return CommandResult(
                exit_code=CANNOT_START,
                output=message,
                timed_out=False,
                duration=time.monotonic() - start,
                output_chars=len(message),
                timeout=timeout,
            )
        timed_out = False
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:  # also on Ctrl-C: the command's own session must not outlive the harness
            _kill_group(process.pid)
            process.wait()
        output, chars = _read_bounded(sink, max_output)
    return CommandResult(
        exit_code=None if timed_out else process.returncode,
        output=output,
        timed_out=timed_out,
        duration=time.monotonic() - start,
        output_chars=chars,
        timeout=timeout,
    )


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
