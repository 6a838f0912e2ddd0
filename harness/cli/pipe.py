"""A reader of stdout that went away (``harness runs | head -1``): no more output, no noise."""

from __future__ import annotations

import os
import sys


def silence_stdout() -> None:
    """Point stdout at the null device, so nothing more is written to the closed pipe and
    Python's flush at exit stays quiet too."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
