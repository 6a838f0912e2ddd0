"""Temporary folders a process holds while it uses them, so that those a killed process left
behind can be told apart from those in use, and removed (``harness clean``).

A folder (``<tmp>/harness-<kind>-XXXXXXXX``, made as :func:`tempfile.mkdtemp` makes one) has a
lock file beside it, ``<folder>.held``, which the process that made it holds locked (``flock``)
until it gives the folder up. The kernel releases the lock when the process ends, however it
ends (``kill -9`` too), so a folder whose lock is free is one no process uses. The lock file lies
beside the folder, never in it: nothing run in the folder (an external agent, its commands, an
MCP server) can take it away. It appears already locked (made under another name, locked, then
renamed), so no one ever finds it free while its folder is in use.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import tempfile
import threading
from pathlib import Path

SUFFIX = ".held"
_FLAGS = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC
_held: dict[Path, int] = {}
"""The folders this process holds, and the descriptor of each one's lock."""
_held_lock = threading.Lock()


def make(prefix: str) -> Path:
    """A new folder in the temporary folder, named ``<prefix>XXXXXXXX`` (mode 0700), held by
    this process until :func:`release`."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    making = folder.with_name(f".{folder.name}{SUFFIX}")
    fd = os.open(making, _FLAGS | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.rename(making, _lock_of(folder))
    except BaseException:
        os.close(fd)
        raise
    with _held_lock:
        _held[folder] = fd
    return folder


def release(folder: Path) -> None:
    """Give ``folder`` up (once it is removed, or left to be): its lock file goes, its lock
    is released."""
    with _held_lock:
        fd = _held.pop(folder, None)
    if fd is None:
        return
    with contextlib.suppress(FileNotFoundError):
        os.unlink(_lock_of(folder))
    os.close(fd)


def remove(folder: Path) -> None:
    """Remove ``folder`` and give it up; what cannot be removed stays held until this process
    ends, and is :func:`sweep`'s then."""
    shutil.rmtree(folder, ignore_errors=True)
    if not os.path.lexists(folder):
        release(folder)


def sweep(root: Path | None = None, *, dry_run: bool = False) -> list[Path]:
    """Remove the folders in ``root`` (default: the temporary folder) that a process of this
    user held and left behind (it ended without giving them up); the folders removed (with
    ``dry_run``, those that would be: nothing is removed).

    A lock file is taken only where it is a regular file of this user's, and its folder only
    where that is a real folder of this user's (not a link); the folder is removed while its
    lock is held, so no one takes it meanwhile.
    """
    base = Path(root or tempfile.gettempdir())
    removed = []
    for lock in sorted(base.glob(f"harness-*{SUFFIX}")):
        folder = lock.with_name(lock.name.removesuffix(SUFFIX))
        try:
            fd = os.open(lock, _FLAGS | os.O_NONBLOCK)
        except OSError:  # a link, gone meanwhile, or not ours to open
            continue
        try:
            if not (_own(os.fstat(fd)) and _own_folder(folder)):
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # held: in use
            if not dry_run:
                shutil.rmtree(folder, ignore_errors=True)
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(lock)
            removed.append(folder)
        finally:
            os.close(fd)
    return removed


def _lock_of(folder: Path) -> Path:
    return folder.with_name(folder.name + SUFFIX)


def _own(status: os.stat_result) -> bool:
    return stat.S_ISREG(status.st_mode) and status.st_uid == os.getuid()


def _own_folder(folder: Path) -> bool:
    try:
        status = folder.lstat()
    except FileNotFoundError:
        return True  # only its lock is left
    except OSError:
        return False
    return stat.S_ISDIR(status.st_mode) and status.st_uid == os.getuid()
