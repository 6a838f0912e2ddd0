"""The tool layer in one import: the Tool type and decorator, the built-ins, confinement.

Each part lives in its own module: :mod:`harness.tools.toolkit`, :mod:`harness.tools.builtin`,
:mod:`harness.tools.paths`. The names here load on first use, so a module that needs only path
confinement does not import every built-in tool.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.core.lazy import lazy_exports

_EXPORTS = {
    "default_tools": "harness.tools.builtin",
    "Tool": "harness.tools.toolkit",
    "Toolbox": "harness.tools.toolkit",
    "ToolContext": "harness.tools.toolkit",
    "ToolResult": "harness.tools.toolkit",
    "tool": "harness.tools.toolkit",
}

__all__ = ["Tool", "ToolContext", "ToolResult", "Toolbox", "default_tools", "tool"]

if TYPE_CHECKING:
    from harness.tools.builtin import default_tools
    from harness.tools.toolkit import Tool, Toolbox, ToolContext, ToolResult, tool


__getattr__ = lazy_exports(__name__, _EXPORTS)
