"""The trust boundary around everything agent-influenced that executes.

The names here load on first use, so a module that needs only the limits (loop.toml's
``[sandbox]`` section) does not import the backends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.core.lazy import lazy_exports

_EXPORTS = {
    "CommandResult": "harness.sandbox.process",
    "Limits": "harness.sandbox.limits",
    "Sandbox": "harness.sandbox.sandbox",
    "default_sandbox": "harness.sandbox.sandbox",
}

__all__ = ["CommandResult", "Limits", "Sandbox", "default_sandbox"]

if TYPE_CHECKING:
    from harness.sandbox.limits import Limits
    from harness.sandbox.process import CommandResult
    from harness.sandbox.sandbox import Sandbox, default_sandbox


__getattr__ = lazy_exports(__name__, _EXPORTS)
