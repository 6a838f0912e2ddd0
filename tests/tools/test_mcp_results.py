"""An MCP result as an observation: each part cut to the limit before the parts are joined."""

from __future__ import annotations

from mcp.types import CallToolResult, TextContent

from harness.tools.mcp_results import observation


def test_each_part_of_a_huge_result_is_cut_before_the_parts_are_joined() -> None:
    huge = "head" + "x" * 5_000_000 + "tail"
    result = CallToolResult(
        content=[TextContent(type="text", text=huge), TextContent(type="text", text="short")],
        structured_content={"result": huge},
    )
    seen = observation(result, 1_000)
    first, second = seen.output.rsplit("\n", 1)
    assert len(first) <= 1_000
    assert first.startswith("head")
    assert first.endswith("tail")
    assert "characters truncated" in first
    assert second == "short"  # the later part survives the first's size
    assert not seen.is_error


def test_huge_structured_content_alone_is_cut_too() -> None:
    result = CallToolResult(content=[], structured_content={"numbers": list(range(500_000))})
    seen = observation(result, 1_000)
    assert len(seen.output) <= 1_000
    assert seen.output.startswith('{\n  "numbers": [\n    0,')
