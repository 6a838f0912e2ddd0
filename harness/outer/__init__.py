"""The outer loop: the driver, the round decision, task rendering, escalation and results.

``OuterLoop`` and ``RunResult`` load on first use, so a module that needs only the loop's
rules (:mod:`harness.outer.rules`, which loop.toml's spec extends) does not import the whole
driver.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.core.lazy import lazy_exports

_EXPORTS = {"OuterLoop": "harness.outer.loop", "RunResult": "harness.outer.result"}

__all__ = ["OuterLoop", "RunResult"]

if TYPE_CHECKING:
    from harness.outer.loop import OuterLoop
    from harness.outer.result import RunResult


__getattr__ = lazy_exports(__name__, _EXPORTS)
