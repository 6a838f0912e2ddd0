"""``Sandbox``: where every agent-influenced command runs (the agent's shell, the gates)."""

from __future__ import annotations

import functools
import os
import shutil
import signal
import sys
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Literal

from harness.core import held_folders
from harness.core.errors import ConfigError
from harness.sandbox.bwrap import SANDBOX_HOME, bwrap_argv, bwrap_problem
from harness.sandbox.command_env import allowed_env, passed_names
from harness.sandbox.container import CONTAINER_HOME, Container
from harness.sandbox.engine import ENGINES
from harness.sandbox.kept import KeptContainers
from harness.sandbox.limits import MB, Cgroup, DiskWatch, Limits, limits_prefix, nproc_prefix
from harness.sandbox.process import CommandResult, cannot_start, run_command
from harness.sandbox.python_env import PythonEnv

Backend = Literal["auto", "bwrap", "none", "docker", "podman"]
BACKENDS = ("auto", "bwrap", "none", "docker", "podman")

NOT_SANDBOXED = (
    "commands are not sandboxed: they run as the harness's user, with its files in reach"
)


class Sandbox:
    """Runs commands behind an OS boundary, with an allow-listed environment and limits.

    ``backend``: ``bwrap`` (bubblewrap namespaces: read-only root, only the workspace
    writable, its ``.git``/``.harness`` and ``readonly`` paths read-only, private ``/tmp``, own
    PID and network namespaces, killed with the harness), ``none`` (plain subprocesses, as the
    harness's user, killed when the harness is gone; :attr:`warning` says so), ``auto``
    (``bwrap`` where it works, else ``none``), or ``docker``/``podman`` (a throw-away container
    of ``image`` per command, with the same promises; never chosen by ``auto``). ``network``
    lets commands reach the network; ``env`` names the variables of the harness's environment
    that commands get beyond ``PATH``, ``LANG``, ``LC_*``, ``TERM``, ``TZ`` (with those
    ``HARNESS_SANDBOX_ENV`` names); ``limits`` bounds memory, processes, file size, ``/tmp``
    and output; ``image`` is the container image (docker and podman only, required); ``hidden``
    paths (held-out tests) are shown empty under ``bwrap``, are not in a container, and cannot
    be hidden by ``none``. ``python_env`` is the project's Python environment (bwrap and
    none): mounted read-only, its ``bin`` first on ``PATH``, its interpreter :attr:`python`.
    ``workdir`` (docker and podman) mounts the workspace where the image expects it
    (``/testbed``) instead of at its own path;
    ``image_python`` is the image's interpreter (default ``python3``), which runs what the
    harness would run with its own (the pytest gate); ``keep`` runs the agent's commands
    (``session=True``) in one long-lived container per workspace, the gates still each in a
    throw-away one.
    """

    def __init__(
        self,
        backend: Backend = "auto",
        *,
        network: bool = False,
        env: Sequence[str] = (),
        limits: Limits | None = None,
        readonly: Sequence[str | os.PathLike[str]] = (),
        image: str | None = None,
        hidden: Sequence[str | os.PathLike[str]] = (),
        python_env: PythonEnv | None = None,
        workdir: str | None = None,
        keep: bool = False,
        image_python: str | None = None,
        guarded: Sequence[str] = (),
    ) -> None:
        if backend not in BACKENDS:
            raise ConfigError(f"backend: expected one of {', '.join(BACKENDS)}, got {backend!r}")
        for field, given in (
            ("image", image is not None),
            ("workdir", workdir),
            ("keep", keep),
            ("image_python", image_python),
        ):
            if given and backend not in ENGINES:
                raise ConfigError(
                    f"{field}: only the docker and podman backends use one, not {backend!r}"
                )
        if python_env is not None and backend in ENGINES:
            raise ConfigError(
                f"python_env: the {backend} backend runs the image's Python, not {python_env.python}"
            )
        problem = bwrap_problem() if backend in ("auto", "bwrap") else None
        if backend == "bwrap" and problem:
            raise ConfigError(f"backend: 'bwrap' was asked for but {problem}")
        self.backend: Literal["bwrap", "none", "docker", "podman"] = (
            "none" if backend == "none" or problem else "bwrap" if backend == "auto" else backend
        )
        self.image = image
        self.warning: str | None = None
        """Said once in the run's output and report when commands are not sandboxed."""
        if self.backend == "none":
            self.warning = NOT_SANDBOXED + (f" ({problem})" if problem else " (backend 'none')")
        self.network = network
        self.env_names = tuple(dict.fromkeys((*env, *passed_names())))
        self.limits = limits or Limits()
        self.readonly = tuple(Path(p).absolute() for p in readonly)
        self.guarded = tuple(guarded)
        """Paths relative to each command's workspace shown read-only (bwrap, containers): the
        folders and files a permission rule keeps the file tools from writing."""
        self.hidden = tuple(Path(p).absolute() for p in hidden)
        """Shown empty to commands (bwrap): what the agent must not read, such as held-out tests."""
        self.python_env = python_env
        self._home: str | None = None
        self._container = (
            Container(
                backend,
                image=image or "",
                network=network,
                limits=self.limits,
                readonly=self.readonly,
                guarded=guarded,
                workdir=workdir,
                python=image_python or "python3",
            )  # fmt: skip
            if backend in ENGINES
            else None
        )
        self._kept = KeptContainers(self._container) if keep and self._container else None

    def close(self) -> None:
        """Remove the long-lived containers of ``keep`` (also done when the sandbox is collected,
        and, by their watchers, when the harness ends)."""
        if self._kept is not None:
            self._kept.close()

    def __repr__(self) -> str:
        image = f", image={self.image!r}" if self.image else ""
        return f"Sandbox(backend={self.backend!r}{image}, network={self.network})"

    @property
    def python(self) -> str:
        """The interpreter Python commands run with: the project's, else the harness's own."""
        return str(self.python_env.python) if self.python_env else sys.executable

    def _env(self, home: str, extra: Mapping[str, str] | None) -> dict[str, str]:
        """The allow-listed environment, the project's environment first on ``PATH``."""
        project = self.python_env
        values = {**(project.variables() if project else {}), **(extra or {})}
        first = str(project.bin_dir) if project else None
        return allowed_env(home=home, names=self.env_names, extra=values, first_on_path=first)

    def run(
        self,
        command: str | Sequence[str],
        *,
        cwd: str | os.PathLike[str],
        timeout: float,
        workspace: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        writable: Sequence[str | os.PathLike[str]] = (),
        max_output: int = 20_000,
        session: bool = False,
    ) -> CommandResult:
        """Run ``command`` (a shell string or an argv list) in ``cwd`` under the sandbox.

        ``workspace`` (default ``cwd``) and ``writable`` are the only places it may write;
        ``env`` are values set on purpose on top of the allow-list. Killed at ``timeout`` or the
        first limit exceeded (the workspace's disk filled by more than ``write_mb`` among
        them); the result says which. ``session``: one of the agent's commands, which a
        sandbox made with ``keep`` runs in the workspace's long-lived container
        (:mod:`harness.sandbox.kept`).
        """
        here = Path(cwd).absolute()
        root = Path(workspace).absolute() if workspace is not None else here
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
        disk = DiskWatch([root, *(Path(p).absolute() for p in writable)])
        if self._container is not None:
            if not here.is_dir():  # else the engine's client would be named as what cannot start
                gone = f"[Errno 2] No such file or directory: {str(here)!r}"
                return cannot_start(argv[0], gone, timeout=timeout, since=time.monotonic())
            if session and self._kept is not None and not writable:
                return self._kept.run(
                    argv, cwd=here, workspace=root, timeout=timeout, max_output=max_output,
                    env=self._env(CONTAINER_HOME, env),
                    watch=self._watch(None, disk),
                )  # fmt: skip
            return self._container.run(
                argv, cwd=here, workspace=root, timeout=timeout,
                env=self._env(CONTAINER_HOME, env),
                writable=[Path(p).absolute() for p in writable], max_output=max_output,
                watch=self._watch(None, disk),
            )  # fmt: skip
        if not isinstance(command, str):  # inside, a missing program is only bwrap's exit 1
            missing = _missing_program(argv, here, self._env("", None)["PATH"])
            if missing:
                return cannot_start(argv[0], missing, timeout=timeout, since=time.monotonic())
        cgroup = Cgroup.create(self.limits)
        try:
            inner = cgroup is None and os.geteuid() != 0
            argv, home = self._confined(argv, root, here, writable, nproc=inner)
            argv = limits_prefix(self.limits, cgroup, lifeline=self._unbound) + argv
            return run_command(
                argv, cwd=here, timeout=timeout, env=self._env(home, env), max_output=max_output,
                watch=self._watch(cgroup, disk), explain=self._explain(cgroup),
            )  # fmt: skip
        finally:
            if cgroup is not None:
                cgroup.kill_all()

    def wrap(
        self,
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike[str],
        workspace: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        writable: Sequence[str | os.PathLike[str]] = (),
        readonly: Sequence[str | os.PathLike[str]] = (),
        sockets: Sequence[str | os.PathLike[str]] = (),
        lifeline: bool = True,
    ) -> tuple[list[str], dict[str, str]]:
        """The command line and environment that start ``argv`` under this sandbox.

        For a long-running process the caller starts, talks to and stops itself (an MCP server
        over stdio): the same boundary as :meth:`run` (namespaces, read-only root, only
        ``workspace`` (default ``cwd``) and ``writable`` writable, ``readonly`` shown read-only
        beside the sandbox's own (``cwd`` outside the workspace, say), no network unless allowed,
        the allow-listed environment plus ``env``, killed with the harness) and the limits that
        bound one process: memory (per process), file size and, outside a cgroup, the process
        count. No time or output limit: the caller decides when the process ends. Start the
        result in ``cwd``, in a session of its own, and kill its process group to stop it.
        A program that cannot be found raises :class:`FileNotFoundError`, as starting it would.
        ``sockets`` are unix sockets of the harness's own (its model gateway) the process may
        connect to, at their own paths (bwrap; without a sandbox every socket is in reach; a
        container cannot be given one). ``lifeline=False``: without a sandbox, no watcher ends
        the process with the harness (its caller does: an MCP server's relay).
        """
        here = Path(cwd).absolute()
        root = Path(workspace).absolute() if workspace is not None else here
        command = list(argv)
        shown = [Path(p).absolute() for p in readonly]
        if self._container is not None:  # the program is the image's: the engine looks for it
            if sockets:
                raise ConfigError(
                    f"backend: a {self.backend} container cannot be given the harness's unix "
                    "sockets; use the bwrap or none backend"
                )
            if not here.is_dir():
                raise FileNotFoundError(f"[Errno 2] No such file or directory: {str(here)!r}")
            return self._container.wrap(
                command, cwd=here, workspace=root,
                env=self._env(CONTAINER_HOME, env),
                writable=[Path(p).absolute() for p in writable], readonly=shown,
            )  # fmt: skip
        missing = _missing_program(command, here, self._env("", None)["PATH"])
        if missing:
            raise FileNotFoundError(missing)
        command, home = self._confined(
            command, root, here, writable, nproc=os.geteuid() != 0, readonly=shown,
            sockets=[Path(p).absolute() for p in sockets],
        )  # fmt: skip
        command = limits_prefix(self.limits, None, lifeline=lifeline and self._unbound) + command
        return command, self._env(home, env)

    def _confined(
        self,
        argv: list[str],
        root: Path,
        here: Path,
        writable: Sequence[str | os.PathLike[str]],
        *,
        nproc: bool,
        readonly: Sequence[Path] = (),
        sockets: Sequence[Path] = (),
    ) -> tuple[list[str], str]:
        """``argv`` inside bubblewrap and its ``HOME`` (backend none: ``argv`` as it is, with a
        home of its own); ``nproc``: bound its process count with ``prlimit``."""
        if self.backend != "bwrap":
            return argv, self._own_home()
        argv = bwrap_argv(
            nproc_prefix(self.limits) + argv if nproc else argv,
            workspace=root, cwd=here, network=self.network,
            tmp_bytes=self.limits.tmp_mb * MB,
            readonly=[*self.readonly, *readonly, *(root / path for path in self.guarded)],
            shm_bytes=min(self.limits.tmp_mb, self.limits.memory_mb) * MB,
            writable=[Path(p) for p in writable], unseen=self.hidden,
            shown=self.python_env.folders() if self.python_env else (), sockets=sockets,
        )  # fmt: skip
        return argv, SANDBOX_HOME

    @property
    def _unbound(self) -> bool:
        """Whether nothing but a watcher ends a command with the harness (backend none: no
        bwrap ``--die-with-parent``, no container watcher)."""
        return self.backend == "none"

    def _own_home(self) -> str:
        """HOME for backend none: a folder of its own, removed with the sandbox."""
        if self._home is None:
            home = held_folders.make("harness-home-")
            weakref.finalize(self, held_folders.remove, home)
            self._home = str(home)
        return self._home

    def _watch(self, cgroup: Cgroup | None, disk: DiskWatch) -> Callable[[int], str | None]:
        names = self.limits.names()
        output_bytes = self.limits.output_mb * MB
        write_bytes = self.limits.write_mb * MB

        def watch(written: int) -> str | None:
            if written > output_bytes:
                return names["output"]
            if disk.grown() > write_bytes:
                return names["write"]
            hit = cgroup.exceeded() if cgroup is not None else None
            return names[hit] if hit else None

        return watch

    def _explain(self, cgroup: Cgroup | None) -> Callable[[int | None], str | None]:
        names = self.limits.names()

        def explain(code: int | None) -> str | None:
            if code in (-signal.SIGXFSZ, 128 + signal.SIGXFSZ):
                return names["file_size"]
            hit = cgroup.exceeded() if cgroup is not None else None
            return names[hit] if hit else None

        return explain


def _missing_program(argv: list[str], cwd: Path, path: str) -> str | None:
    """Why ``argv[0]`` cannot be started (found nowhere on ``path``, missing cwd), or None."""
    if not argv or not argv[0]:
        return "empty command"
    if not cwd.is_dir():
        return f"[Errno 2] No such file or directory: {str(cwd)!r}"
    program = argv[0] if "/" not in argv[0] else str(cwd / argv[0])
    if shutil.which(program, path=path) is None:
        return f"[Errno 2] No such file or directory: {argv[0]!r}"
    return None


@functools.cache
def default_sandbox() -> Sandbox:
    """The ``auto`` sandbox with default settings, made once per process."""
    return Sandbox("auto")
