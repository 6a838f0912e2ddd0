"""The host's unix socket files: the services a sandboxed command could reach without a network.

A unix socket is connected to through its file, and a read-only mount or a network namespace
does not stop that. The kernel lists every socket bound to a path in ``/proc/net/unix``; the
sandbox lays ``/dev/null`` over each one it shows (a connection to it is refused).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

_FIELDS = 7
"""Columns of ``/proc/net/unix`` before the path: Num, RefCount, Protocol, Flags, Type, St, Inode."""


def host_socket_files() -> list[Path]:
    """The socket files bound by this network namespace's processes, as they are now.

    Each path is resolved (a folder on it may be a link) and kept only while it still is a
    socket; abstract sockets (``@name``, no file) and relative paths (bound from a working
    folder nobody can tell) are left out. An unreadable table gives none.
    """
    try:
        lines = Path("/proc/net/unix").read_text(errors="replace").splitlines()[1:]
    except OSError:
        return []
    found: set[Path] = set()
    for line in lines:
        fields = line.split(maxsplit=_FIELDS)
        if len(fields) <= _FIELDS or not fields[_FIELDS].startswith("/"):
            continue
        path = Path(os.path.realpath(fields[_FIELDS]))
        try:
            if stat.S_ISSOCK(os.lstat(path).st_mode):
                found.add(path)
        except OSError:
            continue
    return sorted(found)


def visible_sockets(hidden: Sequence[Path], shown: Sequence[Path]) -> list[Path]:
    """The host's socket files a sandbox shows: those outside every ``hidden`` area (an empty
    file system laid over it) or inside a folder ``shown`` again (mounted over or back)."""

    def under(path: Path, areas: Sequence[Path]) -> bool:
        return any(path.is_relative_to(area) for area in areas)

    hidden = [Path(os.path.realpath(area)) for area in hidden]
    shown = [Path(os.path.realpath(area)) for area in shown]
    return [path for path in host_socket_files() if under(path, shown) or not under(path, hidden)]
