"""The critic's file artifact, read as delivered and nothing else.

The file is the agent's work, so its name is untrusted: a symlink put in its place (to a key,
to ``/proc/self/environ``) must not send the target's bytes to the critic's provider. The file
is opened without following a symlink anywhere on its path, must be a regular file, and only
its head is read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

from harness.core.errors import ToolError
from harness.core.nofollow import read_up_to
from harness.tools.confined_io import open_confined

ARTIFACT_BYTES = 200_000
"""The most of a file artifact the critic is sent; the rest is cut with a stated marker."""


def read_artifact(root: Path, relative: str, *, limit: int = ARTIFACT_BYTES) -> str:
    """The text of ``relative`` inside ``root`` (at most ``limit`` bytes of it, then a marker);
    ``""`` when there is no such file, which the critic fails as an empty artifact.

    Raises :class:`ToolError` for a path that leaves ``root``, a symlink on the path, or a file
    that is not a regular file: nothing of what it leads to is read.
    """
    path = PurePosixPath(relative)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise ToolError(f"{relative!r} is not a path inside the workspace")
    try:
        fd = open_confined(root, root.joinpath(*path.parts), os.O_RDONLY)
    except FileNotFoundError:
        return ""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ToolError(f"{relative} is not a regular file; not read")
        data = read_up_to(fd, limit + 1)
    finally:
        os.close(fd)
    text = data[:limit].decode("utf-8", errors="replace")
    if len(data) > limit:
        text += f"\n[... artifact truncated: {limit} of {info.st_size} bytes shown ...]\n"
    return text
