"""The ``docker`` and ``podman`` backends: each command in a throw-away container.

The same promises as bwrap, kept by the engine: no network, a read-only root, only the
workspace writable (its ``.git`` and the harness's state read-only), a private ``/tmp`` of
bounded size, no capabilities, the harness's user, the allow-listed environment, and the
limits. A container is owned by the engine, not by the harness, so killing the client is not
enough: a command killed at its timeout or a limit has its container removed; a watcher beside
each client removes it when the harness ends, even by SIGKILL; and containers left all the same
(the watcher killed too) are removed the next time a container sandbox starts.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import io
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Literal

from harness.core.errors import ConfigError
from harness.sandbox.bwrap import protected_paths
from harness.sandbox.limits import MB, Limits
from harness.sandbox.process import CommandResult, Watch, run_command

ENGINES = ("docker", "podman")
CONTAINER_HOME = "/tmp"
"""``HOME`` inside a container: its private ``/tmp``."""
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
_NOT_PASSED = ("PATH", "HOME")  # the image's own PATH; HOME is the container's


class Container:
    """Runs commands through ``engine`` (docker or podman) in containers of ``image``.

    Made only when the engine answers and the image is present; otherwise a ConfigError says
    which and why. Making one removes the containers of harnesses that died without cleaning up.
    """

    def __init__(self, engine: str, *, image: str) -> None:
        if engine not in ENGINES:
            raise ConfigError(f"backend: expected one of {', '.join(ENGINES)}, got {engine!r}")
        if not image:
            raise ConfigError(f'image: backend {engine!r} needs an image name (image = "...")')
        program = shutil.which(engine)
        problem = (
            f"{engine} is not installed (no {engine!r} on PATH)"
            if program is None
            else engine_problem(program)
        )
        if problem:
            raise ConfigError(f"backend: {engine!r} was asked for but {problem}")
        assert program is not None
        self.engine, self.program, self.image = engine, program, image
        missing = self._ask("image", "inspect", image)
        if missing is not None:
            raise ConfigError(
                f"image: {image!r} is not available to {engine} ({missing}); "
                f"get it first with: {engine} pull {image}"
            )
        self.owner = _owner()
        self.host = socket.gethostname()
        self.swept = self.sweep()
        """The containers of dead harnesses removed when this one was made."""

    def argv(
        self,
        command: Sequence[str],
        *,
        name: str,
        workspace: Path,
        cwd: Path,
        network: bool,
        limits: Limits,
        env_names: Sequence[str],
        readonly: Sequence[Path] = (),
        writable: Sequence[Path] = (),
    ) -> list[str]:
        """``<engine> run ... image command``: every promise as the engine's own flag.

        ``env_names`` are passed as ``-e NAME`` alone: their values travel in the client's
        environment, never on a command line that ``ps`` shows.
        """
        argv = [self.program, "run", "--rm", "-i", "--name", name, "--pull", "never"]
        argv += ["--label", f"{PID_LABEL}={os.getpid()}", "--label", f"{HOST_LABEL}={self.host}"]
        if not network:
            argv += ["--network", "none"]
        argv += ["--read-only", "--tmpfs", f"/tmp:rw,exec,nosuid,nodev,size={limits.tmp_mb}m"]
        argv += ["--memory", f"{limits.memory_mb}m", "--memory-swap", f"{limits.memory_mb}m"]
        argv += ["--pids-limit", str(limits.processes)]
        size = limits.file_size_mb * MB
        argv += ["--ulimit", f"fsize={size}:{size}", "--ulimit", "core=0:0"]
        argv += ["--cap-drop", "ALL", "--security-opt", "no-new-privileges"]
        argv += ["--user", f"{os.getuid()}:{os.getgid()}"]
        if self.engine == "podman" and os.getuid() != 0:  # rootless: the same uid inside as out
            argv += ["--userns", "keep-id"]
        argv += ["--mount", _bind(workspace)]
        for path in writable:
            argv += ["--mount", _bind(path)]
        for path in [*protected_paths(workspace, readonly), *_shared_git_dir(workspace)]:
            argv += ["--mount", _bind(path, readonly=True)]
        argv += ["-w", str(cwd), "-e", f"HOME={CONTAINER_HOME}"]
        for variable in env_names:
            argv += ["-e", variable]
        # The first word as the entry point: an image's own ENTRYPOINT does not wrap the command.
        argv += ["--entrypoint", command[0], self.image, *command[1:]]
        return argv

    def run(
        self,
        command: Sequence[str],
        *,
        cwd: Path,
        workspace: Path,
        timeout: float,
        env: Mapping[str, str],
        network: bool,
        limits: Limits,
        readonly: Sequence[Path] = (),
        writable: Sequence[Path] = (),
        max_output: int = 20_000,
        watch: Watch | None = None,
        explain: Callable[[int | None], str | None] | None = None,
    ) -> CommandResult:
        """Run ``command`` in a new container; at a timeout or a limit the container is removed.

        ``env`` is the allow-listed environment; all of it but ``PATH`` (the image's own) goes in.
        The harness's own interpreter, which the image does not have, becomes the image's
        ``python3``.
        """
        command = list(command)
        if command and command[0] == sys.executable:
            command[0] = "python3"
        name = f"harness-{self.owner}-{uuid.uuid4().hex[:12]}"
        passed = {k: v for k, v in env.items() if k not in _NOT_PASSED}
        argv = self.argv(
            command, name=name, workspace=workspace, cwd=cwd, network=network, limits=limits,
            env_names=sorted(passed), readonly=readonly, writable=writable,
        )  # fmt: skip
        client_env = {**engine_env(), **passed}
        argv = self.guarded(argv, name=name, when="harness")
        result: CommandResult | None = None
        try:
            result = run_command(
                argv, cwd=cwd, timeout=timeout, env=client_env, max_output=max_output,
                watch=watch, explain=explain,
            )  # fmt: skip
            return result
        finally:  # the client is gone; a container killed at a bound may not be
            if result is None or result.timed_out or result.limit is not None:
                self.remove([name])

    def guarded(
        self, argv: list[str], *, name: str, when: Literal["harness", "either"]
    ) -> list[str]:
        """``argv`` (the engine's client) with a watcher that removes container ``name`` when
        the harness ends (``when="harness"``), or the harness or the client (``"either"``).

        The watcher has a session of its own, so killing the client's process group leaves it
        to do its work; it is what makes a container die with a harness killed by SIGKILL.
        Without ``setsid`` there is no watcher, and :meth:`sweep` is what removes it later.
        """
        if shutil.which("setsid") is None:
            return argv
        owner = str(os.getpid())
        return ["/bin/sh", "-c", _LAUNCH, "harness-container", _WATCH, owner, self.program, name,
                when, *argv]  # fmt: skip

    def remove(self, names: Sequence[str]) -> None:
        """Kill and remove the containers ``names`` (those already gone are no error)."""
        if names:
            self._ask("rm", "-f", *names)

    def sweep(self) -> list[str]:
        """Remove this host's harness containers whose harness is no longer running."""
        listed = self._run("ps", "-a", "--filter", f"label={HOST_LABEL}={self.host}",
                           "--format", "{{.Names}}")  # fmt: skip
        if listed is None or listed.returncode != 0:
            return []
        dead = []
        for line in listed.stdout.split():
            match = _NAME.match(line.strip())
            if match and not _running(int(match[1]), int(match[2])):
                dead.append(match[0])
        self.remove(dead)
        return dead

    def _ask(self, *args: str) -> str | None:
        """Run ``<engine> args``: None when it succeeded, else why not."""
        proc = self._run(*args)
        if proc is None:
            return f"{self.engine} {args[0]} did not answer within {ENGINE_SECONDS:g}s"
        if proc.returncode != 0:
            return _last_line(proc.stderr) or f"exit code {proc.returncode}"
        return None

    def _run(self, *args: str) -> subprocess.CompletedProcess[str] | None:
        return _bounded([self.program, *args])


@functools.cache
def engine_problem(program: str) -> str | None:
    """Why the engine at ``program`` cannot run containers (``info`` fails), or None."""
    name = Path(program).name
    proc = _bounded([program, "info"])
    if proc is None:
        return f"`{name} info` did not answer within {ENGINE_SECONDS:g}s"
    if proc.returncode != 0:
        reason = _last_line(proc.stderr) or f"exit code {proc.returncode}"
        return f"`{name} info` failed: {reason}"
    return None


def engine_env() -> dict[str, str]:
    """What the engine's client needs of the harness's environment (to find its daemon, its
    configuration and storage); nothing else of it reaches even the client."""
    return {
        name: value
        for name, value in os.environ.items()
        if name in _CLIENT_NAMES or name.startswith(_CLIENT_PREFIXES)
    }


def explain_exit(limits: Limits) -> Callable[[int | None], str | None]:
    """Names the limit behind a container's exit code: SIGXFSZ is the file size limit; SIGKILL,
    which inside a container only the engine's out-of-memory killer sends unasked, memory."""
    names = limits.names()

    def explain(code: int | None) -> str | None:
        if code == 128 + signal.SIGXFSZ:
            return names["file_size"]
        if code == 128 + signal.SIGKILL:
            return names["memory"]
        return None

    return explain


def _bounded(argv: list[str]) -> subprocess.CompletedProcess[str] | None:
    """Run an engine command with its output captured; None when it took too long (killed)."""
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=engine_env(),
                                start_new_session=True)  # fmt: skip
    except OSError as exc:
        return subprocess.CompletedProcess(argv, 127, "", f"cannot start {argv[0]}: {exc}")
    with proc:
        try:
            out, err = proc.communicate(timeout=ENGINE_SECONDS)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return None
        return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def _bind(path: Path, *, readonly: bool = False) -> str:
    """``--mount`` of ``path`` at the same path (CSV-quoted: a comma in a path stays in it)."""
    fields = ["type=bind", f"source={path}", f"target={path}"] + (["readonly"] if readonly else [])
    line = io.StringIO()
    csv.writer(line, lineterminator="").writerow(fields)
    return line.getvalue()


def _shared_git_dir(workspace: Path) -> list[Path]:
    """The repository's git folder when the workspace is a worktree (``.git`` is a file naming
    it): mounted read-only, so ``git`` works in the container but cannot change it."""
    marker = workspace / ".git"
    if marker.is_symlink() or not marker.is_file():
        return []
    try:
        gitdir = Path(marker.read_text().removeprefix("gitdir:").strip())
        gitdir = gitdir if gitdir.is_absolute() else workspace / gitdir
        common = gitdir / (gitdir / "commondir").read_text().strip()
    except OSError:
        return []
    common = common.resolve()
    return [common] if common.is_dir() and not common.is_relative_to(workspace) else []


def _owner() -> str:
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
