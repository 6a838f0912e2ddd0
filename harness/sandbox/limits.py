"""Limits on one command: memory, processes, file size, private ``/tmp`` and output.

Each is enforced by the kernel where it can be: a cgroup (``pids.max``, the memory limit) when
the harness may create one, else resource limits (``RLIMIT_AS``, ``RLIMIT_NPROC``);
``RLIMIT_FSIZE`` for the size of any one file; a sized tmpfs for ``/tmp``; the output file's size
and how much the workspace's disk filled (:class:`DiskWatch`) are watched. The command is killed
at the first one exceeded and the result names it.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import time
import uuid
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

MB = 1 << 20
_CGROUP_ROOT = Path("/sys/fs/cgroup")


class Limits(BaseModel):
    """The bounds of one command; loop.toml ``[sandbox.limits]``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    memory_mb: int = Field(4096, ge=16)
    processes: int = Field(512, ge=4)
    file_size_mb: int = Field(1024, ge=1)  # the largest file a command may write
    tmp_mb: int = Field(512, ge=1)  # the private /tmp (bwrap)
    output_mb: int = Field(64, ge=1)  # stdout and stderr together
    write_mb: int = Field(4096, ge=1)  # what one command adds to its workspace's disk, in all

    def names(self) -> dict[str, str]:
        return {
            "memory": f"memory limit ({self.memory_mb} MB)",
            "processes": f"process limit ({self.processes})",
            "file_size": f"file size limit ({self.file_size_mb} MB)",
            "output": f"output limit ({self.output_mb} MB)",
            "write": f"write limit ({self.write_mb} MB)",
        }


LIFELINE_SECONDS = 0.2
"""How often a command run without a sandbox looks whether the harness's process is still there."""


def limits_prefix(limits: Limits, cgroup: Cgroup | None, *, lifeline: bool = False) -> list[str]:
    """``/bin/sh -c '...; exec "$@"' sh``: joins ``cgroup``, lowers the resource limits, runs on.

    One small shell rather than a program per limit, so the limits cost one exec. ``ulimit -f``
    counts 512-byte blocks (POSIX), ``-v`` KiB; ``-v`` (memory per process) only where no cgroup
    bounds the whole command.

    ``lifeline`` (a command no sandbox ends with the harness: backend ``none``): a watcher in the
    command's session looks for this process every :data:`LIFELINE_SECONDS` and, once it is gone
    (killed, even with SIGKILL), kills the command's process group, all it started there with
    it; the watcher leaves when the command ends. The command must be started in a session of
    its own: it is that session's group the watcher kills, and no other.
    """
    places = cgroup.places() if cgroup else []
    steps = [f"echo 0 > {shlex.quote(str(d / 'cgroup.procs'))}" for d in places]
    steps += ["ulimit -c 0", f"ulimit -f {limits.file_size_mb * MB // 512}"]  # one each (dash)
    if cgroup is None:
        steps.append(f"ulimit -v {limits.memory_mb * 1024}")
    script = "; ".join(steps)
    script += f"; {_watcher(os.getpid())}" if lifeline else ";"  # the watcher's '&' ends it
    return ["/bin/sh", "-c", f'{script} exec "$@"', "sh"]


def _watcher(harness: int) -> str:
    """The shell line that watches process ``harness`` for the command this shell becomes
    (``$$``: the same process after ``exec``), in the background, its output nowhere."""
    there = f"kill -0 {harness} 2>/dev/null"
    return (
        f"(while {there} && kill -0 $$ 2>/dev/null; do sleep {LIFELINE_SECONDS}; done; "
        f"{there} || kill -s KILL -- -$$) </dev/null >/dev/null 2>&1 &"
    )


def nproc_prefix(limits: Limits) -> list[str]:
    """``prlimit --nproc=N --`` (empty without prlimit): inside a user namespace, where
    ``RLIMIT_NPROC`` counts the sandbox's own processes alone."""
    if shutil.which("prlimit") is None:
        return []
    return ["prlimit", f"--nproc={limits.processes}:{limits.processes}", "--"]


class DiskWatch:
    """How much the file systems holding some folders (a command's workspace and writable
    folders) have filled since it was made: one ``statvfs`` each, so it is cheap to ask often.

    It counts what any process writes there, not the command alone: on a disk others write to
    at the same time, their writes count too (a busy shared disk can stop a command early).
    """

    def __init__(self, folders: list[Path]) -> None:
        self._start: dict[int, tuple[Path, int]] = {}
        for folder in folders:
            with contextlib.suppress(OSError):
                device = folder.stat().st_dev
                if device not in self._start:
                    self._start[device] = (folder, _used(folder))

    def grown(self) -> int:
        """Bytes the file systems hold beyond what they held at the start (never below 0)."""
        total = 0
        for folder, start in self._start.values():
            with contextlib.suppress(OSError):
                total += max(_used(folder) - start, 0)
        return total


def _used(folder: Path) -> int:
    stats = os.statvfs(folder)
    return (stats.f_blocks - stats.f_bfree) * stats.f_frsize


class Cgroup:
    """A cgroup for one command (v1 ``pids`` + ``memory``, or v2), when this process may make one.

    It bounds the whole command tree (``RLIMIT_NPROC`` does not bind root, ``RLIMIT_AS`` is per
    process), tells which bound was hit, and knows every process to kill at the end.
    """

    def __init__(self, dirs: dict[str, Path], limits: Limits) -> None:
        self.dirs = dirs  # controller -> directory ("pids", "memory"; both the same for v2)
        v2 = dirs["pids"] == dirs["memory"]
        self._write("pids", "pids.max", str(limits.processes))
        memory_file = "memory.max" if v2 else "memory.limit_in_bytes"
        self._write("memory", memory_file, str(limits.memory_mb * MB))
        if v2:
            self._write("memory", "memory.swap.max", "0", optional=True)
        self._events = {"processes": ("pids.events", "max"),
                        "memory": ("memory.events" if v2 else "memory.oom_control", "oom_kill")}  # fmt: skip

    @classmethod
    def create(cls, limits: Limits) -> Cgroup | None:
        """A fresh cgroup under this process's own, or None where that is not allowed."""
        dirs = _own_cgroup_dirs()
        if dirs is None:
            return None
        for parent in set(dirs.values()):
            _sweep(parent)
        name = f"harness-{uuid.uuid4().hex[:12]}"
        made: dict[str, Path] = {}
        try:
            for controller, parent in dirs.items():
                child = parent / name
                if child not in made.values():
                    child.mkdir()
                made[controller] = child
            return cls(made, limits)
        except OSError:
            for child in set(made.values()):
                with contextlib.suppress(OSError):
                    child.rmdir()
            return None

    def places(self) -> list[Path]:
        """Its folders (one for v2, one per controller for v1)."""
        return sorted(set(self.dirs.values()))

    def exceeded(self) -> str | None:
        """``processes`` or ``memory`` once the kernel refused a fork or killed for memory."""
        for kind, (file, key) in self._events.items():
            for line in self._read("pids" if kind == "processes" else kind, file).splitlines():
                name, _, count = line.partition(" ")
                if name == key and count.strip() not in ("", "0"):
                    return kind
        return None

    def kill_all(self) -> None:
        """SIGKILL whatever is still in the cgroup (a command's survivors), then remove it."""
        for _ in range(50):
            pids = [int(p) for p in self._read("pids", "cgroup.procs").split()]
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            os.sched_yield()
        for directory in self.places():
            _remove(directory)

    def _write(self, kind: str, file: str, value: str, *, optional: bool = False) -> None:
        try:
            (self.dirs[kind] / file).write_text(value)
        except OSError:
            if not optional:
                raise

    def _read(self, kind: str, file: str) -> str:
        try:
            return (self.dirs[kind] / file).read_text()
        except OSError:
            return ""


def _remove(directory: Path) -> None:
    """rmdir a cgroup, waiting briefly while the kernel finishes releasing its last processes."""
    for _ in range(20):
        try:
            directory.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.005)


def _sweep(parent: Path) -> None:
    """Remove command cgroups left empty (a harness killed before its cleanup) over a minute ago."""
    with contextlib.suppress(OSError):
        for child in parent.glob("harness-*"):
            with contextlib.suppress(OSError):
                if time.time() - child.stat().st_mtime > 60:
                    child.rmdir()  # fails, harmlessly, while it still holds processes


def _own_cgroup_dirs() -> dict[str, Path] | None:
    """Where this process's ``pids`` and ``memory`` cgroups are, if it may write there."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    v1: dict[str, Path] = {}
    v2: Path | None = None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            if controller in ("pids", "memory"):
                v1[controller] = _CGROUP_ROOT / controller / path.lstrip("/")
        if controllers == "":
            v2 = _CGROUP_ROOT / path.lstrip("/")
    if len(v1) == 2 and all(os.access(d, os.W_OK) for d in v1.values()):
        return v1
    if v2 is not None and os.access(v2, os.W_OK):
        enabled = v2 / "cgroup.subtree_control"
        with contextlib.suppress(OSError):
            if {"pids", "memory"} <= set(enabled.read_text().split()):
                return {"pids": v2, "memory": v2}
    return None
