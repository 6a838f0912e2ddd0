"""The general loop engine: loops, exit conditions, foreach, loop variables, bounds and templates."""

from harness.engine.bounds import Watchdog
from harness.engine.condition import Condition
from harness.engine.foreach import ForEach
from harness.engine.loop import Loop
from harness.engine.result import ForEachResult, LoopResult, RoundRecord
from harness.engine.variables import Variable

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
