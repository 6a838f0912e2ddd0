"""Opening workspace files so that nothing swapped in on the way can lead outside.

:func:`~harness.tools.paths.resolve_in_workspace` checks a path when a tool starts; between that
check and the open, a command running alongside could swap a folder on the way for a symlink.
So files are opened by walking from the workspace root one component at a time, each opened
relative to its parent's descriptor without following symlinks (``openat`` with
``O_NOFOLLOW``): a symlink that appears on the way fails the open instead of being followed.
Writes are also refused through a file with more than one hard link (its other name may lie
outside the workspace).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import IO

from harness.core.errors import ToolError
from harness.core.nofollow import descend, read_up_to


def open_confined(root: Path, target: Path, flags: int, *, make_parents: bool = False) -> int:
    """A descriptor of ``target`` (inside ``root``) opened with ``flags``, no symlink followed.

    ``make_parents`` creates missing folders on the way (never through a symlink).
    """
    parts = target.relative_to(root).parts
    if not parts:
        raise ToolError("the workspace root is a directory, not a file")
    try:
        fd = descend(root, parts[:-1], make=make_parents)
    except OSError as exc:
        raise _explained(exc, target.relative_to(root).as_posix()) from None
    try:
        # O_NONBLOCK: a named pipe without a reader is an error, not a hang.
        return os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o666,
                       dir_fd=fd)  # fmt: skip
    except OSError as exc:
        raise _explained(exc, target.relative_to(root).as_posix()) from None
    finally:
        os.close(fd)


def read_confined(
    root: Path, target: Path, *, errors: str = "replace", newline: str | None = None
) -> IO[str]:
    """``target`` open for reading text (UTF-8), opened by :func:`open_confined`."""
    fd = open_confined(root, target, os.O_RDONLY)
    return open(fd, encoding="utf-8", errors=errors, newline=newline)


def read_bytes_head(root: Path, target: Path, size: int) -> bytes:
    """The first ``size`` bytes of ``target``, opened by :func:`open_confined`."""
    fd = open_confined(root, target, os.O_RDONLY)
    try:
        return read_up_to(fd, size)
    finally:
        os.close(fd)


def write_confined(root: Path, target: Path, text: str, *, errors: str = "strict") -> None:
    """Replace ``target``'s content with ``text`` (created, with its folders, when missing).

    Refused when ``target`` is not a regular file or has another name (a hard link).
    """
    rel = target.relative_to(root).as_posix()
    fd = open_confined(root, target, os.O_WRONLY | os.O_CREAT, make_parents=True)
    with open(fd, "w", encoding="utf-8", errors=errors, newline="") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ToolError(f"{rel} is not a regular file; not written")
        if info.st_nlink > 1:
            raise ToolError(
                f"{rel} has {info.st_nlink} hard links: writing it would change the file under "
                "its other names too (which may lie outside the workspace); not written. "
                "Delete it first (with run_shell: rm) to write a fresh file"
            )
        os.ftruncate(fd, 0)
        handle.write(text)


def _explained(exc: OSError, rel: str) -> OSError | ToolError:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EEXIST):
        return ToolError(
            f"{rel}: a symlink (or a file) is on the path where a folder or file was expected, "
            "perhaps swapped in while it was opened; not followed"
        )
    if exc.errno == errno.ENXIO:
        return ToolError(f"{rel} is a named pipe without a reader; not opened")
    return exc
