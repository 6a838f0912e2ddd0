"""The bubblewrap backend: the command line that puts a command in its own namespaces."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from harness.sandbox.host_sockets import visible_sockets
from harness.sandbox.own_source import source_folders

SANDBOX_HOME = "/tmp/home"
"""``HOME`` inside the sandbox: a folder of its private ``/tmp``."""

STATE_NAMES = (".git", ".harness/runs", ".harness/progress")
"""Folders (or files) of a workspace a sandboxed command may read but never write."""
MOUNT_POINTS_BYTES = 1 << 20
"""Size of the empty file system laid over the hidden home: room for mount points only."""
STATE_GLOBS = (".harness/*.escalation.md", ".harness/*.lock")
"""The harness's own files in ``.harness`` (the rest of it is the workspace's)."""
RUNTIME_DIRS = (Path("/run"), Path("/var/run"))
"""Where the host's services keep their unix sockets (docker, D-Bus, databases, the user's
session): replaced by an empty file system when the network is off, since a unix socket is
reachable through a read-only mount and outside any network namespace."""
FRESH_DIRS = (Path("/dev"), Path("/proc"))
"""File systems of the sandbox's own: nothing of the host's shows in them."""


def bwrap_argv(
    command: Sequence[str],
    *,
    workspace: Path,
    cwd: Path,
    network: bool,
    tmp_bytes: int,
    shm_bytes: int | None = None,
    readonly: Sequence[Path] = (),
    writable: Sequence[Path] = (),
    unseen: Sequence[Path] = (),
    shown: Sequence[Path] = (),
    sockets: Sequence[Path] = (),
) -> list[str]:
    """``bwrap ... -- command``: the root read-only, the workspace and ``writable`` not.

    New PID, IPC, UTS, cgroup, user and (unless ``network``) network namespaces; a private
    ``/tmp`` of ``tmp_bytes`` and ``/dev/shm`` of ``shm_bytes`` (default ``tmp_bytes``), the rest
    of ``/dev`` read-only; without ``network``, empty :data:`RUNTIME_DIRS` (the host's
    unix sockets out of reach); the harness's home folder hidden (its credentials: ``~/.netrc``,
    ``~/.aws``, ``~/.ssh``) but for the interpreter's and ``PATH``'s folders in it; the
    workspace's ``.git``, the harness's state in its ``.harness`` and every ``readonly`` path
    mounted read-only over the writable workspace; each ``unseen`` path (held-out tests) shown
    empty; each ``shown`` folder (the project's Python environment) mounted read-only wherever it
    lies, the hidden home and ``/tmp`` included; each of ``sockets`` (a unix socket the harness
    serves, such as its model gateway) shown at its own path, the one socket of the host's the
    command can reach without a network; no capabilities; killed with the harness.
    """
    argv = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    shm = str(tmp_bytes if shm_bytes is None else shm_bytes)
    argv += ["--perms", "1777", "--size", shm, "--tmpfs", "/dev/shm", "--remount-ro", "/dev"]
    argv += ["--size", str(tmp_bytes), "--tmpfs", "/tmp", "--dir", SANDBOX_HOME]
    hidden = [Path("/tmp")]
    if not network:
        runtime = [path for path in RUNTIME_DIRS if path.is_dir() and not path.is_symlink()]
        for path in runtime:
            argv += ["--size", str(MOUNT_POINTS_BYTES), "--tmpfs", str(path)]
        hidden += runtime
    home = _home_to_hide(workspace)
    if home is not None:
        argv += ["--size", str(MOUNT_POINTS_BYTES), "--tmpfs", str(home)]
        hidden.append(home)
    search_path = tuple(os.environ.get("PATH", "").split(os.pathsep))
    back = [path for area in hidden for path in _mounted_back(area, search_path)]
    for path in back:
        argv += ["--ro-bind", str(path), str(path)]
    inside = [path for path in shown if path.is_relative_to(workspace)]
    outside: list[Path] = []
    for path in shown:  # before the workspace: a folder holding it must not hide it read-only
        holds_hidden = any(area.is_relative_to(path) for area in hidden)  # never all of home
        if path not in inside and path.is_dir() and not holds_hidden:
            argv += ["--ro-bind", str(path), str(path)]
            outside.append(path)
    argv += ["--bind", str(workspace), str(workspace)]
    for path in writable:
        argv += ["--bind", str(path), str(path)]
    for path in protected_paths(workspace, [*readonly, *inside]):
        argv += ["--ro-bind", str(path), str(path)]
    if not network:  # what the root, the workspace and the folders shown again hold
        reachable = [*back, *outside, workspace, *writable, *readonly]
        argv += _socket_mounts([*hidden, *FRESH_DIRS], reachable, sockets)
    for path in sockets:  # read-only: a socket is connected to all the same, never replaced
        argv += ["--ro-bind", str(path), str(path)]
    if home is not None:  # only the folders mounted back show through; nothing new is written
        argv += ["--remount-ro", str(home)]
    argv += hide(unseen)
    argv += ["--unshare-all", "--die-with-parent", "--new-session"]
    if network:
        argv.append("--share-net")
    if os.geteuid() == 0:  # root keeps every capability inside unless told otherwise
        argv += ["--cap-drop", "ALL"]
    argv += ["--chdir", str(cwd), "--", *command]
    return argv


def _socket_mounts(
    hidden: Sequence[Path], reachable: Sequence[Path], sockets: Sequence[Path]
) -> list[str]:
    """Mounts laying ``/dev/null`` over each host socket the command could reach but
    ``sockets`` (the harness's own, shown on purpose)."""
    argv: list[str] = []
    for path in visible_sockets(hidden, reachable):
        if path not in sockets:
            argv += ["--ro-bind", "/dev/null", str(path)]
    return argv


def hide(paths: Sequence[Path]) -> list[str]:
    """Mounts that show each of ``paths`` empty: a folder as an empty read-only file system, a
    file as ``/dev/null`` read-only (which the sandbox's ``/dev`` rules make unreadable: nothing is
    shown); a path that does not exist, or is a link, needs none."""
    argv: list[str] = []
    for path in paths:
        if path.is_symlink() or not path.exists():
            continue
        if path.is_dir():
            argv += ["--size", str(MOUNT_POINTS_BYTES), "--tmpfs", str(path)]
            argv += ["--remount-ro", str(path)]
        else:
            argv += ["--ro-bind", "/dev/null", str(path)]
    return argv


def protected_paths(workspace: Path, readonly: Sequence[Path] = ()) -> list[Path]:
    """What is mounted read-only over the writable workspace: its ``.git``, the harness's state
    in its ``.harness`` and ``readonly``, those that exist (a symlink is not followed)."""
    protected = [workspace / name for name in STATE_NAMES] + list(readonly)
    protected += [path for pattern in STATE_GLOBS for path in sorted(workspace.glob(pattern))]
    return [path for path in protected if os.path.lexists(path) and not path.is_symlink()]


@functools.cache
def bwrap_problem() -> str | None:
    """Why the bwrap backend cannot be used here, or None when it works (checked once)."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    here = Path(tempfile.gettempdir())
    probe = bwrap_argv(["true"], workspace=here, cwd=here, network=False, tmp_bytes=1 << 20)
    try:
        proc = subprocess.run(probe, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bwrap could not be started: {exc}"
    if proc.returncode != 0:
        reason = proc.stderr.strip().splitlines()[-1:] or [f"exit code {proc.returncode}"]
        return f"bwrap does not work here ({reason[0]}); user namespaces may be disabled"
    return None


def _home_to_hide(workspace: Path) -> Path | None:
    """The harness's home folder, unless it is ``/`` or missing or the workspace holds it."""
    home = Path(os.path.expanduser("~")).resolve()
    if home == Path("/") or not home.is_dir() or home.is_relative_to(workspace.resolve()):
        return None
    return home


@functools.cache
def _mounted_back(area: Path, search_path: tuple[str, ...]) -> tuple[Path, ...]:
    """The interpreter's folders, the harness's source and ``search_path``'s entries under ``area``.

    ``area`` (the private ``/tmp``, the hidden home) would hide them, and with them the Python
    that runs the gates (a virtual environment made there), the harness's own package (a
    checkout installed with ``pip install -e .``, which gates run as ``python -m harness...``)
    and the programs on ``PATH``; they are mounted back read-only.
    """
    area = area.resolve()
    interpreter = (sys.prefix, sys.exec_prefix, sys.base_prefix, *sys.path)
    found = sorted(
        {
            Path(entry).resolve()
            for entry in (*interpreter, *map(str, source_folders()), *search_path)
            if entry and Path(entry).is_dir() and Path(entry).resolve().is_relative_to(area)
        }
    )
    kept: list[Path] = []
    for path in found:  # sorted: a folder comes before what lies inside it
        if path != area and not any(path.is_relative_to(outer) for outer in kept):
            kept.append(path)
    return tuple(kept)
