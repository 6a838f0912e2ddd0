"""Running commands: process-group timeouts, scrubbed environments, bounded output."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

SECRET_ENV_PATTERN = re.compile(
    r"(API_KEY|_TOKEN|SECRET|PASSWORD|ACCESS_KEY|PRIVATE_KEY|CREDENTIALS?)$|^AWS_SESSION",
    re.IGNORECASE,
)
"""Environment variables that never reach a child process the agent or a gate starts."""

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
        if not SECRET_ENV_PATTERN.search(k)
    }
    env.update(extra or {})
    bin_dir = os.path.dirname(sys.executable)
    path = env.get("PATH", os.defpath)
    if bin_dir and path.split(os.pathsep)[0] != bin_dir:
        env["PATH"] = bin_dir + os.pathsep + path if path else bin_dir
    return env


def truncate(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, keeping its head and tail with a marker."""
    if len(text) <= limit:
        return text
    marker = f"\n[... {len(text) - limit} characters truncated ...]\n"
    keep = max(limit - len(marker), 0)
    head = keep // 2
    return text[:head] + marker + text[len(text) - (keep - head) :]


@dataclass(frozen=True)
class CommandResult:
    """What a finished (or killed) command left behind."""

    exit_code: int | None  # None when it was killed at its timeout
    output: str  # stdout and stderr interleaved, already truncated
    timed_out: bool
    duration: float
    output_chars: int  # size before truncation

    def describe(self) -> str:
        status = (
            f"timed out after {self.duration:.1f}s (process group killed)"
            if self.timed_out
            else f"exit code {self.exit_code}"
        )
        return f"[{status}]\n{self.output}"


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
            )
        timed_out = False
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        _kill_group(process.pid)
        process.wait()
        size = sink.tell()
        output = _read_bounded(sink, size, max_output)
    return CommandResult(
        exit_code=None if timed_out else process.returncode,
        output=output,
        timed_out=timed_out,
        duration=time.monotonic() - start,
        output_chars=size,
    )


def _kill_group(pid: int) -> None:
    # Also after a normal exit: background children the command left behind must not outlive it.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _read_bounded(sink: BinaryIO, size: int, limit: int) -> str:
    """Head and tail of the output file without loading all of a huge output into memory."""
    sink.seek(0)
    if size <= 4 * limit:
        return truncate(sink.read().decode("utf-8", "replace"), limit)
    head = sink.read(limit // 2).decode("utf-8", "ignore")
    sink.seek(size - limit // 2)
    tail = sink.read().decode("utf-8", "ignore")
    return f"{head}\n[... {size - len(head) - len(tail)} characters truncated ...]\n{tail}"
