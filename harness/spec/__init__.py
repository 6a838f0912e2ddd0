"""The one definition of a loop: :class:`LoopSpec` (loop.toml and Python build it) and its builder."""

from harness.spec.loop_spec import CONFIG_NAME, LoopSpec, find_config

__all__ = ["CONFIG_NAME", "LoopSpec", "find_config"]
