"""The outer loop: the driver, the round decision, task rendering, escalation and results."""

from harness.outer.loop import OuterLoop
from harness.outer.result import RunResult

__all__ = ["OuterLoop", "RunResult"]
