"""An MCP tool result as the observation the model reads.

Text blocks are kept as they are; structured content is shown as JSON when no text block
carries it; images, audio and binary resources are described rather than pasted. A result the
server marks as an error becomes an error observation. Each part is cut to the observation's
limit before the parts are joined, so no second copy of a huge result is made here.

The MCP SDK reads a whole JSON-RPC message before handing it over, at about ten times its size;
a stdio server's messages over :data:`~harness.tools.mcp_server.MAX_MESSAGE_BYTES` never reach
it (:mod:`harness.tools.mcp_relay` answers in their place), which bounds that cost. A server
over ``url`` is read by the SDK as it is.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from harness.core.text import truncate
from harness.tools.toolkit import ERROR_PREFIX, ToolResult

if TYPE_CHECKING:
    from mcp.types import CallToolResult


def observation(result: CallToolResult, limit: int) -> ToolResult:
    """``result`` as the model reads it, each part cut to ``limit`` characters (head and tail)."""
    parts = [truncate(_block_text(block), limit) for block in result.content]
    structured = result.structured_content
    if structured is not None and not any(_block_kind(b) == "text" for b in result.content):
        parts.append(truncate(json.dumps(structured, ensure_ascii=False, indent=2), limit))
    text = "\n".join(part for part in parts if part) or "(no output)"
    if result.is_error:
        return ToolResult(f"{ERROR_PREFIX}{text}", is_error=True)
    return ToolResult(text)


def _block_kind(block: Any) -> str:
    return str(getattr(block, "type", ""))


def _block_text(block: Any) -> str:
    kind = _block_kind(block)
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        return f"[{kind}: {block.mime_type}, {len(block.data) * 3 // 4} bytes]"
    if kind == "resource":
        contents = block.resource
        text = getattr(contents, "text", None)
        if text is not None:
            return f"[resource {contents.uri}]\n{text}"
        return f"[resource {contents.uri}: {contents.mime_type or 'binary'}, not shown]"
    if kind == "resource_link":
        return f"[resource link: {block.uri}]"
    return f"[{kind or 'unknown'} content]"
