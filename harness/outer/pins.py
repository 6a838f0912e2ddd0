"""The files a run's configuration and code come from, pinned by digest when the run begins.

A run takes loop.toml, SKILL.md, its python gate modules and the programs its hooks name as
they were when it began: their digests go into progress.md's ``## Run`` section, a resumed run
whose files no longer match is refused before any of them is read for use, and a command hook
whose program changed since the start is not run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from harness.core import nofollow

Pin = tuple[str, str]
"""(absolute path, sha256 hex digest of its bytes; ``missing`` when there is no such file)."""

MISSING = "missing"
_MAX_BYTES = 16 << 20


def digest(path: Path) -> str:
    """The sha256 of the regular file at ``path`` (no link followed), else ``missing``."""
    try:
        data = nofollow.read_bytes(path, limit=_MAX_BYTES)
    except (OSError, nofollow.UnsafePath):
        return MISSING
    return hashlib.sha256(data).hexdigest()


def pin(paths: Iterable[Path]) -> tuple[Pin, ...]:
    """Each path (made absolute, once) with its digest now."""
    names = dict.fromkeys(str(Path(path).absolute()) for path in paths)
    return tuple((name, digest(Path(name))) for name in names)


def first_changed(pins: Iterable[Pin]) -> str | None:
    """The first pinned file whose bytes are no longer what was pinned, or None."""
    return next((name for name, sha in pins if digest(Path(name)) != sha), None)
