"""Removing a folder a run left, whatever the run put in it: never an error past the caller.

A run's checkout holds what its agent made: a folder nested past ``PATH_MAX`` (Python's
``shutil.rmtree`` recurses, and fails), a folder without write permission, a FIFO. Removal
tries ``shutil.rmtree`` first, then makes each folder writable and has ``rm -rf`` (which walks
any depth) finish; it says whether the folder went, and raises nothing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from pathlib import Path


def remove_tree(path: Path) -> bool:
    """Remove ``path`` (a folder and all in it, or a file or link: never followed); whether it
    is gone."""
    if not os.path.lexists(path):
        return True
    if path.is_symlink() or not path.is_dir():
        with contextlib.suppress(OSError):
            path.unlink()
        return not os.path.lexists(path)
    try:
        shutil.rmtree(path)
    except (OSError, RecursionError):
        for command in (["chmod", "-R", "u+rwx", "--", str(path)], ["rm", "-rf", "--", str(path)]):
            subprocess.run(command, capture_output=True, check=False, timeout=600)
    return not os.path.lexists(path)
