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

import csv
import io
import os
import signal
import socket
import sys
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from harness.core.errors import ConfigError
from harness.sandbox.bwrap import protected_paths
from harness.sandbox.engine import (
    HOST_LABEL,
    PID_LABEL,
    engine_env,
    find_engine,
    guarded,
    owner_tag,
    remove,
    sweep,
)
from harness.sandbox.limits import MB, Limits
from harness.sandbox.process import CommandResult, Watch, run_command

CONTAINER_HOME = "/tmp"
"""``HOME`` inside a container: its private ``/tmp``."""
_NOT_PASSED = ("PATH", "HOME")  # the image's own PATH; HOME is the container's


class Container:
    """Runs commands through ``engine`` (docker or podman) in containers of ``image``, with
    ``network``, ``limits`` and the ``readonly`` paths of its sandbox.

    Made only when the engine answers and the image is present; otherwise a ConfigError says
    which and why. Making one removes the containers of harnesses that died without cleaning up.
    """

    def __init__(
        self,
        engine: str,
        *,
        image: str,
        network: bool = False,
        limits: Limits | None = None,
        readonly: Sequence[Path] = (),
        workdir: str | None = None,
        python: str = "python3",
        guarded: Sequence[str] = (),
    ) -> None:
        if not image:
            raise ConfigError(f'image: backend {engine!r} needs an image name (image = "...")')
        self.engine, self.image = engine, image
        self.program = find_engine(engine, image)
        self.network, self.limits, self.readonly = network, limits or Limits(), tuple(readonly)
        self.guarded = tuple(guarded)  # paths relative to each workspace, mounted read-only
        if workdir is not None and not (workdir.startswith("/") and not workdir.endswith("/")):
            raise ConfigError(f"workdir: expected an absolute path below /, got {workdir!r}")
        self.workdir = workdir
        """Where the workspace is mounted in the image (its ``/testbed``); None: at its own path."""
        self.python = python
        """The image's interpreter, which runs what the harness runs with its own."""
        self.owner = owner_tag()
        self.host = socket.gethostname()
        sweep(self.program, self.host)  # the containers of dead harnesses

    def options(
        self, workspace: Path, *, writable: Sequence[Path] = (), readonly: Sequence[Path] = ()
    ) -> list[str]:
        """What a container is made with: its bounds, its user and its mounts (the workspace at
        :attr:`workdir`, or at its own path)."""
        limits = self.limits
        argv = ["--pull", "never"]
        argv += ["--label", f"{PID_LABEL}={os.getpid()}", "--label", f"{HOST_LABEL}={self.host}"]
        if not self.network:
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
        argv += ["--mount", _bind(workspace, self.inside(workspace, workspace))]
        for path in writable:
            argv += ["--mount", _bind(path, str(path))]
        guarded = [workspace / path for path in self.guarded]
        shown = protected_paths(workspace, [*self.readonly, *readonly, *guarded])
        for path in [*shown, *_shared_git_dir(workspace)]:
            argv += ["--mount", _bind(path, self.inside(path, workspace), readonly=True)]
        return argv

    def session(self, cwd: Path, workspace: Path, env_names: Sequence[str]) -> list[str]:
        """What one command is started with: its folder and its environment's names."""
        argv = ["-w", self.inside(cwd, workspace), "-e", f"HOME={CONTAINER_HOME}"]
        for variable in env_names:
            argv += ["-e", variable]
        return argv

    def inside(self, path: Path, workspace: Path) -> str:
        """Where ``path`` is seen in the container: under :attr:`workdir` when it lies in the
        workspace mounted there, else at its own path."""
        if self.workdir is None or not path.is_relative_to(workspace):
            return str(path)
        relative = path.relative_to(workspace).as_posix()
        return self.workdir if relative == "." else f"{self.workdir.rstrip('/')}/{relative}"

    def run(
        self,
        command: Sequence[str],
        *,
        cwd: Path,
        workspace: Path,
        timeout: float,
        env: Mapping[str, str],
        writable: Sequence[Path] = (),
        max_output: int = 20_000,
        watch: Watch | None = None,
    ) -> CommandResult:
        """Run ``command`` in a new container; at a timeout or a limit the container is removed."""
        argv, client_env, name = self._client(command, cwd, workspace, env, writable)
        result: CommandResult | None = None
        try:
            result = run_command(
                guarded(argv, program=self.program, name=name, when="harness"), cwd=cwd,
                timeout=timeout, env=client_env, max_output=max_output, watch=watch,
                explain=explain_exit(self.limits),
            )  # fmt: skip
            return result
        finally:  # the client is gone; a container killed at a bound may not be
            if result is None or result.timed_out or result.limit is not None:
                remove(self.program, [name])

    def wrap(
        self,
        command: Sequence[str],
        *,
        cwd: Path,
        workspace: Path,
        env: Mapping[str, str],
        writable: Sequence[Path] = (),
        readonly: Sequence[Path] = (),
    ) -> tuple[list[str], dict[str, str]]:
        """The client's command line and environment that start ``command`` in a container and
        stay attached to its stdin and stdout; its container is removed once the client or the
        harness ends, so killing the client's process group stops it. ``readonly`` paths are
        shown read-only beside the sandbox's own."""
        argv, client_env, name = self._client(command, cwd, workspace, env, writable, readonly)
        return guarded(argv, program=self.program, name=name, when="either"), client_env

    def _client(
        self,
        command: Sequence[str],
        cwd: Path,
        workspace: Path,
        env: Mapping[str, str],
        writable: Sequence[Path],
        readonly: Sequence[Path] = (),
    ) -> tuple[list[str], dict[str, str], str]:
        """(the client's argv, its environment, the container's name) for ``command``:
        ``<engine> run ... image command``, every promise as the engine's own flag.

        ``env`` is the allow-listed environment (see :func:`passed_env`); its names alone are
        on the command line (``-e NAME``): the values travel in the client's environment, never
        on a command line that ``ps`` shows.
        """
        name = self.new_name()
        passed = passed_env(env)
        argv = [self.program, "run", "--rm", "-i", "--name", name]
        argv += self.options(workspace, writable=writable, readonly=readonly)
        argv += self.session(cwd, workspace, sorted(passed))
        # The first word as the entry point: an image's own ENTRYPOINT does not wrap the command.
        mapped = self.in_image(command, workspace)
        argv += ["--entrypoint", mapped[0], self.image, *mapped[1:]]
        return argv, {**engine_env(), **passed}, name

    def in_image(self, command: Sequence[str], workspace: Path) -> list[str]:
        """``command`` as the image runs it: the harness's own interpreter, which the image does
        not have, becomes the image's :attr:`python`, and each word that is a path in the
        workspace is as seen in the container."""
        command = list(command)
        if command and command[0] == sys.executable:
            command[0] = self.python
        if self.workdir is None:
            return command
        return [
            self.inside(Path(word), workspace) if Path(word).is_relative_to(workspace) else word
            for word in command
        ]

    def new_name(self) -> str:
        """A name for a container of this harness (:func:`~harness.sandbox.engine.sweep` reads
        whose it is from it)."""
        return f"harness-{self.owner}-{uuid.uuid4().hex[:12]}"


def passed_env(env: Mapping[str, str]) -> dict[str, str]:
    """The allow-listed environment that goes into a container: all of it but ``PATH`` (the
    image's own) and ``HOME`` (the container's)."""
    return {k: v for k, v in env.items() if k not in _NOT_PASSED}


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


def _bind(path: Path, target: str, *, readonly: bool = False) -> str:
    """``--mount`` of ``path`` at ``target`` (CSV-quoted: a comma in a path stays in it)."""
    fields = ["type=bind", f"source={path}", f"target={target}"] + (
        ["readonly"] if readonly else []
    )
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
