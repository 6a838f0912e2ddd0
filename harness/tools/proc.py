"""Running commands: process-group timeouts, scrubbed environments, bounded output.

The implementation lives in the sandbox layer (:mod:`harness.sandbox.process`); these names
stay here for the code that imports them from the tools.
"""

from __future__ import annotations

from harness.sandbox.command_env import safe_env
from harness.sandbox.process import CANNOT_START, CommandResult, run_command

__all__ = ["CANNOT_START", "CommandResult", "run_command", "safe_env"]
