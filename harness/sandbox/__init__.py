"""The trust boundary around everything agent-influenced that executes."""

from harness.sandbox.limits import Limits
from harness.sandbox.process import CommandResult
from harness.sandbox.sandbox import Sandbox, default_sandbox

__all__ = ["CommandResult", "Limits", "Sandbox", "default_sandbox"]
