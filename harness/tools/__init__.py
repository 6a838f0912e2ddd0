"""The tool layer in one import: the Tool type and decorator, the built-ins, confinement.

Each part lives in its own module: :mod:`harness.tools.toolkit`, :mod:`harness.tools.builtin`,
:mod:`harness.tools.paths`.
"""

from harness.tools.builtin import default_tools
from harness.tools.toolkit import Tool, Toolbox, ToolContext, ToolResult, tool

__all__ = ["Tool", "ToolContext", "ToolResult", "Toolbox", "default_tools", "tool"]
