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
import threading
from collections import deque
from pathlib import Path

from harness.core import nofollow

MAX_REMEMBERED = 10_000
"""Deliveries remembered (at least); a replay of one older than this many may be taken again."""

KEYS_PER_DELIVERY = 2  # its id (when it has one) and its body's digest


class SeenDeliveries:
    """The deliveries taken, in ``path`` (made when the first one is taken), read and written
    without following a link below ``root``: a link planted there stops the watcher
    (:class:`~harness.core.nofollow.UnsafePath`) rather than carrying its writes elsewhere."""

    def __init__(
        self, path: Path, *, root: Path | None = None, bound: int = MAX_REMEMBERED
    ) -> None:
        self.path = path
        self.root = root
        self.bound = bound
        self._lock = threading.Lock()
        try:
            text = nofollow.read_bytes(path, root=root).decode("utf-8", errors="replace")
        except FileNotFoundError:
            text = ""
        self._keys = deque(line for line in text.splitlines()[-bound * KEYS_PER_DELIVERY :] if line)
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
            data = "".join(f"{key}\n" for key in self._keys).encode()
            nofollow.write_atomic(self.path, data, root=self.root)
            self._written = len(self._keys)
            return
        data = "".join(f"{key}\n" for key in keys).encode()
        nofollow.append(self.path, data, root=self.root, durable=True)  # taken means remembered
        self._written += len(keys)
