"""The general loop engine: loops, exit conditions, foreach, loop variables, bounds and templates."""

from harness.engine.condition import Condition
from harness.engine.foreach import ForEach
from harness.engine.loop import Loop, LoopResult

__all__ = ["Condition", "ForEach", "Loop", "LoopResult"]
