"""The general loop engine: loops, exit conditions, foreach, loop variables, bounds and templates.

The names here load on first use, so a module that needs only the engine's bounds (a loop's
cap on rounds) does not import the engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.core.lazy import lazy_exports

_EXPORTS = {
    "Condition": "harness.engine.condition",
    "ForEach": "harness.engine.foreach",
    "ForEachResult": "harness.engine.result",
    "Loop": "harness.engine.loop",
    "LoopResult": "harness.engine.result",
    "RoundRecord": "harness.engine.result",
    "Variable": "harness.engine.variables",
    "Watchdog": "harness.engine.bounds",
}

__all__ = [
    "Condition",
    "ForEach",
    "ForEachResult",
    "Loop",
    "LoopResult",
    "RoundRecord",
    "Variable",
    "Watchdog",
]

if TYPE_CHECKING:
    from harness.engine.bounds import Watchdog
    from harness.engine.condition import Condition
    from harness.engine.foreach import ForEach
    from harness.engine.loop import Loop
    from harness.engine.result import ForEachResult, LoopResult, RoundRecord
    from harness.engine.variables import Variable


__getattr__ = lazy_exports(__name__, _EXPORTS)
