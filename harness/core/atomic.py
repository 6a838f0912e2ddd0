"""Crash-safe file replacement: a reader or a crash sees the old file or the new one, never a mix."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path


def atomic_write_text(path: str | os.PathLike[str], text: str, *, encoding: str = "utf-8") -> Path:
    """Replace ``path`` with ``text`` atomically and durably; return the path.

    The text goes to a temporary file in the same folder, which is flushed, fsynced and renamed
    over the target with :func:`os.replace`; the folder is then fsynced so the rename survives a
    power cut. A missing folder is created. Newlines are written as given. An existing file keeps its permission bits;
    a new one gets ``0o644``.
    If the process is killed between the write and the rename, a ``.<name>.*.tmp`` file may be
    left beside the target; the target itself is untouched.
    """
    target = Path(path)
    folder = target.parent
    data = text.encode(encoding)
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = 0o644
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as tmp:
            tmp.write(data)
            tmp.flush()
            os.fchmod(tmp.fileno(), mode)
            os.fsync(tmp.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    _fsync_dir(folder)
    return target


def _fsync_dir(folder: Path) -> None:
    """Make a rename inside ``folder`` durable."""
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
