"""Objects made once and kept for the whole process (what a large import builds): the garbage
collector need never look at them.

A collection walks every object it tracks; the hundreds of thousands an import such as litellm's
leaves alive would be walked by each full collection (during the import itself, and once more at
interpreter exit) though none of them is ever garbage. Inside :func:`lasting` no collection runs,
and at its end every object alive is frozen (:func:`gc.freeze`): left out of every later
collection, the one at exit included.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def lasting() -> Iterator[None]:
    """A block (an import) whose objects stay for the process's life: no collection runs in
    it, and every object alive at its end is frozen; the collector is on again afterwards if it
    was before."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
