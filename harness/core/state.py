"""The user's state folder: what the harness keeps outside every workspace and repository."""

from __future__ import annotations

import os
from pathlib import Path


def state_home() -> Path:
    """``$XDG_STATE_HOME/harness``, else ``~/.local/state/harness``."""
    configured = os.environ.get("XDG_STATE_HOME")
    base = Path(configured) if configured else Path.home() / ".local" / "state"
    return base / "harness"
