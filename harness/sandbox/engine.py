"""Talking to docker or podman: the bounded questions, the client's environment, whose a
container is, and the watcher that removes a container when its harness ends."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from harness.core.errors import ConfigError

ENGINES = ("docker", "podman")
ENGINE_SECONDS = 10.0
"""The longest the harness waits for the engine to answer a question (``info``, ``ps``, ``rm``)."""
PID_LABEL = "harness.pid"
HOST_LABEL = "harness.host"
_NAME = re.compile(r"^harness-(\d+)-(\d+)-[0-9a-f]+$")
"""``harness-<owner pid>-<owner start time>-<random>``: whose a container is, from its name."""
_WATCH = (
    'while kill -0 "$1" 2>/dev/null && kill -0 "$2" 2>/dev/null; do sleep 0.5; done; '
    '{ [ "$5" = either ] || ! kill -0 "$2"; } 2>/dev/null && exec "$3" rm -f "$4" >/dev/null 2>&1'
)
"""Watches the client ($1) and the harness ($2); removes container $4 through engine $3."""
_LAUNCH = (
    'setsid /bin/sh -c "$1" harness-watch "$$" "$2" "$3" "$4" "$5" </dev/null >/dev/null 2>&1 & '
    'shift 5; exec "$@"'
)
"""Starts the watcher in a session of its own, then becomes the client (the same pid)."""
_CLIENT_NAMES = ("PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "XDG_RUNTIME_DIR",
                 "XDG_CONFIG_HOME", "XDG_DATA_HOME")  # fmt: skip
_CLIENT_PREFIXES = ("DOCKER_", "CONTAINER_", "CONTAINERS_", "PODMAN_", "REGISTRY_AUTH_FILE")


def find_engine(engine: str, image: str) -> str:
    """The path of ``engine``'s client, once it answers and has ``image``; else a ConfigError
    naming the backend or the image and what failed."""
    program = shutil.which(engine)
    absent = f"{engine} is not installed (no {engine!r} on PATH)"
    problem = engine_problem(program) if program else absent
    if problem or program is None:
        raise ConfigError(f"backend: {engine!r} was asked for but {problem}")
    missing = failure(engine, call(program, "image", "inspect", image))
    if missing is not None:
        raise ConfigError(
            f"image: {image!r} is not available to {engine} ({missing}); "
            f"get it first with: {engine} pull {image}"
        )
    return program


@functools.cache
def engine_problem(program: str) -> str | None:
    """Why the engine at ``program`` cannot run containers (``info`` fails), or None."""
    asked = f"`{Path(program).name} info`"
    proc = call(program, "info")
    problem = failure(asked, proc)
    return problem if proc is None or problem is None else f"{asked} failed: {problem}"


def engine_env() -> dict[str, str]:
    """What the engine's client needs of the harness's environment (to find its daemon, its
    configuration and storage); nothing else of it reaches even the client."""
    return {
        name: value
        for name, value in os.environ.items()
        if name in _CLIENT_NAMES or name.startswith(_CLIENT_PREFIXES)
    }


def call(program: str, *args: str) -> subprocess.CompletedProcess[str] | None:
    """``program args`` with its output captured; None when it took too long (then killed)."""
    argv = [program, *args]
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=engine_env(),
                                start_new_session=True)  # fmt: skip
    except OSError as exc:
        return subprocess.CompletedProcess(argv, 127, "", f"cannot start {program}: {exc}")
    with proc:
        try:
            out, err = proc.communicate(timeout=ENGINE_SECONDS)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return None
        return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def failure(engine: str, proc: subprocess.CompletedProcess[str] | None) -> str | None:
    """Why an engine :func:`call` failed, or None when it succeeded."""
    if proc is None:
        return f"{engine} did not answer within {ENGINE_SECONDS:g}s"
    if proc.returncode != 0:
        return _last_line(proc.stderr) or f"exit code {proc.returncode}"
    return None


def remove(program: str, names: Sequence[str]) -> None:
    """Kill and remove the containers ``names`` (those already gone are no error)."""
    if names:
        call(program, "rm", "-f", *names)


def sweep(program: str, host: str) -> list[str]:
    """Remove ``host``'s harness containers whose harness no longer runs; their names."""
    listed = call(program, "ps", "-a", "--filter", f"label={HOST_LABEL}={host}",
                  "--format", "{{.Names}}")  # fmt: skip
    if listed is None or listed.returncode != 0:
        return []
    found = [_NAME.match(line) for line in listed.stdout.split()]
    dead = [m[0] for m in found if m and not _running(int(m[1]), int(m[2]))]
    remove(program, dead)
    return dead


def guarded(
    argv: list[str], *, program: str, name: str, when: Literal["harness", "either"]
) -> list[str]:
    """``argv`` (the engine's client) with a watcher that removes container ``name`` when
    the harness ends (``when="harness"``), or the harness or the client (``"either"``).

    The watcher has a session of its own, so killing the client's process group leaves it
    to do its work; it is what makes a container die with a harness killed by SIGKILL.
    Without ``setsid`` there is no watcher, and :func:`sweep` is what removes it later.
    """
    if shutil.which("setsid") is None:
        return argv
    owner = str(os.getpid())
    return ["/bin/sh", "-c", _LAUNCH, "harness-container", _WATCH, owner, program, name, when,
            *argv]  # fmt: skip


def owner_tag() -> str:
    """``<pid>-<start time>`` of this process: a pid reused later does not pass for it."""
    return f"{os.getpid()}-{_start_time(os.getpid()) or 0}"


def _start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks after boot), or None when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rpartition(")")[2].split()[19])  # field 22; the name may hold spaces


def _running(pid: int, started: int) -> bool:
    """Whether the harness that made a container (``pid`` started at ``started``) still runs."""
    if not Path("/proc/self/stat").exists():  # no /proc: the pid alone
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return _start_time(pid) == started


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""
