"""The outer loop: the driver, the round decision, task rendering, escalation and results.

``OuterLoop`` and ``RunResult`` load on first use, so a module that needs only the loop's
options (:mod:`harness.outer.options`, which loop.toml's spec extends) does not import the
whole driver.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {"OuterLoop": "harness.outer.loop", "RunResult": "harness.outer.result"}

__all__ = ["OuterLoop", "RunResult"]

if TYPE_CHECKING:
    from harness.outer.loop import OuterLoop
    from harness.outer.result import RunResult


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'harness.outer' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
