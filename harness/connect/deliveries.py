"""Webhook deliveries already taken, remembered in a file so that a replayed delivery is refused,
after a restart of the watcher too.

A delivery is known by two keys: its ``X-GitHub-Delivery`` id and the SHA-256 of its signed body.
The id alone is not enough: the signature covers the body, not the headers, so a captured
delivery sent again under a new id is still recognised by its body. The most recent ``bound``
deliveries are remembered; the file (one key a line, appended) is rewritten to them when it
holds twice as many.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import deque
from pathlib import Path

from harness.core.atomic import atomic_write_text

MAX_REMEMBERED = 10_000
"""Deliveries remembered (at least); a replay of one older than this many may be taken again."""

KEYS_PER_DELIVERY = 2  # its id (when it has one) and its body's digest


class SeenDeliveries:
    """The deliveries taken, in ``path`` (made when the first one is taken)."""

    def __init__(self, path: Path, *, bound: int = MAX_REMEMBERED) -> None:
        self.path = path
        self.bound = bound
        self._lock = threading.Lock()
        self._keys: deque[str] = deque()
        if path.is_file():
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
            self._keys.extend(line for line in lines[-bound * KEYS_PER_DELIVERY :] if line)
        self._seen = set(self._keys)
        self._written = len(self._keys)  # lines in the file

    def take(self, delivery: str | None, body: bytes) -> bool:
        """Remember the delivery ``delivery`` (its id, if it came with one) with ``body``;
        False, remembering nothing, when either was taken before."""
        keys = [f"body:{hashlib.sha256(body).hexdigest()}"]
        if delivery:
            keys.insert(0, f"id:{delivery}")
        with self._lock:
            if any(key in self._seen for key in keys):
                return False
            self._keys.extend(keys)
            self._seen.update(keys)
            while len(self._keys) > self.bound * KEYS_PER_DELIVERY:
                self._seen.discard(self._keys.popleft())
            self._save(keys)
        return True

    def _save(self, keys: list[str]) -> None:
        if self._written + len(keys) > 2 * self.bound * KEYS_PER_DELIVERY:
            atomic_write_text(self.path, "".join(f"{key}\n" for key in self._keys))
            self._written = len(self._keys)
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as file:
            file.write("".join(f"{key}\n" for key in keys))
            file.flush()
            os.fsync(file.fileno())  # taken means remembered, a power cut notwithstanding
        self._written += len(keys)
