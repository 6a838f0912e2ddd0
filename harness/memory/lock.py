"""One driver per loop: an advisory ``flock`` on a lock file beside progress.md."""

from __future__ import annotations

import fcntl
import json
import os
from datetime import UTC, datetime
from pathlib import Path

from harness.core import nofollow
from harness.core.errors import HarnessError


class LockHeld(HarnessError):
    """Another process already drives this loop; the message names the holder."""

    def __init__(self, lock_path: Path, holder: dict[str, object]) -> None:
        self.lock_path = lock_path
        self.holder = holder
        if "pid" in holder:
            who = (
                f"pid {holder['pid']} on {holder.get('host', '?')}, "
                f"started {holder.get('started', '?')}"
            )
        elif holder:
            who = f"a process whose lock file reads {holder.get('details')!r}"
        else:
            who = "a process that has not written its details yet"
        super().__init__(f"{lock_path} is held by {who}")


class LoopLock:
    """Exclusive, non-blocking lock for the loop whose state lives at ``path``.

    The lock file is ``<path>.lock``; while held it records the holder's pid, host and start
    time as JSON; its folder is created if missing. It is opened without following a link
    (:mod:`harness.core.nofollow`) and must be a regular file. The kernel releases the lock when
    the holder exits or dies, so a stale file never blocks anyone. The descriptor is not inherited by child processes. Use it as a context
    manager, or call :meth:`acquire` and :meth:`release`.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        target = Path(path)
        self.path = target.with_name(target.name + ".lock")
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        """Whether this object currently holds the lock."""
        return self._fd is not None

    def acquire(self) -> LoopLock:
        """Take the lock or raise :class:`LockHeld` naming the current holder."""
        if self._fd is not None:
            return self
        fd = nofollow.open_file(self.path, os.O_RDWR | os.O_CREAT, make_folders=True)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise LockHeld(self.path, holder) from None
        except BaseException:
            os.close(fd)
            raise
        details = {
            "pid": os.getpid(),
            "host": os.uname().nodename,
            "started": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(details) + "\n").encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        """Give the lock up (clearing the holder's details); a no-op when not held."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)
        finally:
            os.close(fd)

    def holder(self) -> dict[str, object] | None:
        """Who holds the lock, read without taking it (so a run starting now is not refused):
        the details the holder wrote, unless they name a process of this host that is gone (a
        killed holder's details stay behind). None when no one holds it."""
        try:
            fd = nofollow.open_file(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            details = _read_holder(fd)
        finally:
            os.close(fd)
        if not details or self.held:
            return None
        pid = details.get("pid")
        if details.get("host") == os.uname().nodename and isinstance(pid, int):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return None
            except PermissionError:
                pass  # alive, another user's
        return details

    def __enter__(self) -> LoopLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _read_holder(fd: int) -> dict[str, object]:
    """The holder's details from the lock file, or ``{}`` if not written (yet) or unreadable."""
    raw = os.pread(fd, 4096, 0).decode(errors="replace").strip()
    try:
        holder = json.loads(raw) if raw else {}
    except json.JSONDecodeError:
        return {"details": raw}
    return holder if isinstance(holder, dict) else {"details": raw}
