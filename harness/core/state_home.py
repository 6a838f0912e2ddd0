"""The user's state folder: where the harness keeps what no agent may write.

``$XDG_STATE_HOME/harness`` (default ``~/.local/state/harness``) lies outside every workspace,
and out of a sandboxed command's reach: bwrap hides the home folder (but for the interpreter's
and ``PATH``'s folders mounted back read-only) and a container never sees it. Batch record
ledgers and the people's inboxes (notes, approvals) live here.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def state_home() -> Path:
    """The user's state folder: ``$XDG_STATE_HOME``, else ``~/.local/state``."""
    configured = os.environ.get("XDG_STATE_HOME")
    base = Path(configured) if configured else Path.home() / ".local" / "state"
    return base / "harness"


def state_folder(kind: str, owner: str | os.PathLike[str]) -> Path:
    """``<state home>/<kind>/<24 hex of owner's absolute path>``: the folder of one owner (a
    batch's output folder, a loop's progress file), made when missing, readable by the user
    alone."""
    key = hashlib.sha256(str(Path(os.path.abspath(owner)).resolve()).encode()).hexdigest()[:24]
    folder = state_home() / kind / key
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder
