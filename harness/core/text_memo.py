"""A memo of texts and a string derived from each, bounded by the characters it holds.

What a run derives from a long text (its redacted form, its hash) is asked for again and again:
an observation is recorded in the trajectory and then sent in the next request, a test's output
or a file comes back unchanged. A :class:`TextMemo` keeps the latest answers so the work is done
once. It is bounded by what it holds, not by a count: a few whole observations of a megabyte
each must not keep hundreds of megabytes alive.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

ENTRY_CHARS = 64
"""What an entry costs beyond its texts, counted in characters: many short texts fill it too."""


class TextMemo:
    """``derive(text)``, remembered for the latest texts up to ``max_chars`` characters in all
    (each text, its derived string where that is another object, and :data:`ENTRY_CHARS`).

    The oldest entries are forgotten first. A text larger than a quarter of the bound is not
    kept (it would push out everything else). Thread-safe; ``derive`` runs outside the lock,
    so two threads asking for the same new text may both derive it.
    """

    def __init__(self, derive: Callable[[str], str], max_chars: int) -> None:
        self._derive = derive
        self.max_chars = max_chars
        self._lock = threading.Lock()
        self._items: dict[str, str] = {}
        # the texts, oldest first: a dict's first key is found by walking past every slot
        # emptied before it, so taking the oldest from it would cost more as the memo turns over
        self._order: deque[str] = deque()
        self._chars = 0

    def of(self, text: str) -> str:
        """``derive(text)``, from the memo when it holds ``text``. A method, not ``__call__``:
        calling an instance costs several times a method call, and a step asks often."""
        found = self._items.get(text)
        if found is not None:
            return found
        derived = self._derive(text)
        size = _size(text, derived)
        if size <= self.max_chars // 4:
            with self._lock:
                if text not in self._items:
                    self._items[text] = derived
                    self._order.append(text)
                    self._chars += size
                    while self._chars > self.max_chars:
                        oldest = self._order.popleft()
                        self._chars -= _size(oldest, self._items.pop(oldest))
        return derived

    @property
    def chars(self) -> int:
        """The characters held now, as counted against ``max_chars``."""
        return self._chars

    def __len__(self) -> int:
        return len(self._items)


def _size(text: str, derived: str) -> int:
    return len(text) + (0 if derived is text else len(derived)) + ENTRY_CHARS
