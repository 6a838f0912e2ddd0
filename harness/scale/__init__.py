"""Many loops at once: fleets."""

from harness.scale.fleet import Fleet, Subtask

__all__ = ["Fleet", "Subtask"]
