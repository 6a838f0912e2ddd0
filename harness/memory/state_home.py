"""The user's state folder: what the harness keeps outside every workspace.

``$XDG_STATE_HOME/harness`` (default ``~/.local/state/harness``) holds batch ledgers and the
test results measured at base commits. A sandboxed command never writes there: bwrap hides the
home folder (or mounts it read-only), a container never sees it.
"""

from __future__ import annotations

import os
from pathlib import Path


def state_home() -> Path:
    """The user's state folder: ``$XDG_STATE_HOME``, else ``~/.local/state``; then ``harness``."""
    configured = os.environ.get("XDG_STATE_HOME")
    base = Path(configured) if configured else Path.home() / ".local" / "state"
    return base / "harness"
