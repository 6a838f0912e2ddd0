"""The one definition of a loop: :class:`LoopSpec` (loop.toml and Python build it) and its builder.

``LoopSpec`` loads on first use, so reading a loop.toml's outline
(:mod:`harness.spec.outline`, what ``harness status`` reads) imports no pydantic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.core.lazy import lazy_exports
from harness.spec.outline import CONFIG_NAME, find_config

__all__ = ["CONFIG_NAME", "LoopSpec", "find_config"]

if TYPE_CHECKING:
    from harness.spec.loop_spec import LoopSpec

__getattr__ = lazy_exports(__name__, {"LoopSpec": "harness.spec.loop_spec"})
