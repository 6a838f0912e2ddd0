"""Where the harness's own code is loaded from: a sandboxed gate runs ``python -m harness...``."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
"""The folder of the imported ``harness`` package."""


@functools.cache  # the finders are set up at start: once per process, not per command
def source_folders() -> tuple[Path, ...]:
    """The ``harness`` package's folder and every source an editable install's finder maps.

    An editable install (``pip install -e .``) loads packages through a meta-path finder whose
    module holds ``MAPPING`` (a top-level name to its folder or file), so the checkout is on no
    ``sys.path`` entry; a sandbox that hides the home folder or ``/tmp`` must mount these back.
    Only the packages' own folders are named (for a single module, its folder), never the rest
    of a checkout (an ``.env`` beside it stays hidden).
    """
    found = [PACKAGE]
    for finder in sys.meta_path:
        module = sys.modules.get(getattr(finder, "__module__", ""))
        mapping = getattr(module, "MAPPING", None)
        if isinstance(mapping, dict):
            found += [Path(path) for path in mapping.values() if isinstance(path, str)]
    return tuple(path if path.is_dir() else path.parent for path in found)
