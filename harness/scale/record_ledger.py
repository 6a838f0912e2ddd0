"""What a batch wrote, kept where its tasks cannot write: a record changed since is not trusted.

A batch's records (``<out>/tasks/<name>/record.json``) lie, by default, in ``.harness/batch/``
of the folder the batch runs in, which is every task's workspace when its loop works in place
(``isolation = "none"``): a task's agent could rewrite another task's record as passed. So each
time the batch writes a record it also keeps the SHA-256 of the bytes it wrote in a ledger under
the user's state folder (``$XDG_STATE_HOME/harness/batches/``, default
``~/.local/state/harness/batches/``), outside every workspace and out of a sandboxed command's
reach (bwrap hides or mounts read-only the home folder; a container never sees it). A record
read back whose digest is not the one kept is not believed.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

from harness.core import nofollow
from harness.core.atomic import atomic_write_text
from harness.memory.state_home import state_home

LEDGER_LIMIT = 16 * 1024 * 1024
"""The most a ledger may hold when read (16 MB: some hundred thousand tasks)."""

_lock = threading.Lock()


def ledger_path(out: Path) -> Path:
    """The ledger of the batch whose output folder is ``out``."""
    key = hashlib.sha256(str(Path(os.path.abspath(out))).encode()).hexdigest()[:24]
    return state_home() / "batches" / f"{key}.json"


def remember(out: Path, name: str, data: bytes) -> None:
    """Keep the digest of ``data``, the record of task ``name`` just written in ``out``."""
    path = ledger_path(out)
    with _lock:
        digests = _read(path)
        digests[name] = hashlib.sha256(data).hexdigest()
        atomic_write_text(path, json.dumps(digests, indent=1, sort_keys=True) + "\n")


def trusted(out: Path, name: str, data: bytes) -> bool:
    """Whether ``data`` is the record of task ``name`` the batch last wrote in ``out``."""
    with _lock:
        return _read(ledger_path(out)).get(name) == hashlib.sha256(data).hexdigest()


def _read(path: Path) -> dict[str, str]:
    try:
        loaded = json.loads(nofollow.read_bytes(path, limit=LEDGER_LIMIT))
    except (FileNotFoundError, ValueError):
        return {}
    if not isinstance(loaded, dict):
        return {}
    return {k: v for k, v in loaded.items() if isinstance(k, str) and isinstance(v, str)}
