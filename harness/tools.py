"""The tool layer in one import: the Tool type and decorator, the built-ins, confinement.

Each part lives in its own module: :mod:`harness.toolkit`, :mod:`harness.builtin_tools`,
:mod:`harness.workspace_paths`.
"""

from harness.builtin_tools import default_tools
from harness.toolkit import Tool, Toolbox, ToolContext, ToolResult, tool

__all__ = ["Tool", "ToolContext", "ToolResult", "Toolbox", "default_tools", "tool"]
