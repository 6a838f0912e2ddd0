"""Crash-safe file replacement: a reader or a crash sees the old file or the new one, never a mix."""

from __future__ import annotations

import os
from pathlib import Path

from harness.core.nofollow import write_atomic


def atomic_write_text(
    path: str | os.PathLike[str],
    text: str,
    *,
    encoding: str = "utf-8",
    root: str | os.PathLike[str] | None = None,
    durable: bool = True,
) -> Path:
    """Replace ``path`` with ``text`` atomically and durably; return the path.

    The text goes to a temporary file in the same folder, which is flushed, fsynced and renamed
    over the target; the folder is then fsynced so the rename survives a power cut. Missing
    folders are created. Newlines are written as given. An existing file keeps its permission
    bits; a new one gets ``0o644``. If the process is killed between the write and the rename, a
    ``.<name>.*.tmp`` file may be left beside the target; the target itself is untouched.

    No link is followed below the trusted root (``root``, else the one registered with
    :func:`harness.core.nofollow.trusted_root`, else the file's folder), and a target that is
    not a regular file is refused (:class:`~harness.core.nofollow.UnsafePath`).

    ``durable=False`` leaves out the fsyncs: still atomic for every process, but not proof
    against an operating-system crash or power cut (for a record rewritten very often that a
    durable write follows later).
    """
    return write_atomic(path, text.encode(encoding), root=root, durable=durable)
