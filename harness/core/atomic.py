"""Crash-safe file replacement: a reader or a crash sees the old file or the new one, never a mix."""

from __future__ import annotations

import os
from pathlib import Path

from harness.core.nofollow import write_atomic


def atomic_write_text(
    path: str | os.PathLike[str],
    text: str,
    *,
    root: str | os.PathLike[str] | None = None,
    durable: bool = True,
) -> Path:
    """Replace ``path`` with ``text`` (UTF-8, newlines as given) as
    :func:`~harness.core.nofollow.write_atomic` does, and return the path: atomically, durably
    unless ``durable=False`` (for a record rewritten very often that a durable write follows
    later), no link followed below the trusted root, an existing file's mode kept (a new one's
    ``0o644``). A process killed between the write and the rename may leave a ``.<name>.*.tmp``
    file beside the target; the target itself is untouched.
    """
    return write_atomic(path, text.encode("utf-8"), root=root, durable=durable)
