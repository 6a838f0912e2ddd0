"""The tool through which the agent keeps progress.md: tick items, add items, set the resume point.

Changes are made on the loop's :class:`Progress` and saved (atomically) when the round is recorded,
so a session that is cut off leaves progress.md as the last completed round left it.
"""

from __future__ import annotations

from harness.core.errors import ToolError
from harness.core.text import one_line
from harness.memory.progress import Progress
from harness.tools import Tool, tool


def progress_tool(progress: Progress) -> Tool:
    """An ``update_progress`` tool bound to ``progress``."""

    @tool(name="update_progress")
    def update_progress(
        done: list[str] | None = None,
        add: list[str] | None = None,
        resume_point: str | None = None,
    ) -> str:
        """Update the checklist and resume point the next session starts from.

        Args:
            done: Finished items: text, part of it, or number from 1.
            add: New items.
        """
        for item in add or ():
            progress.add_item(item)
        for item in done or ():
            progress.mark_done(_which(progress, item))
        if resume_point is not None:
            progress.set_resume_point(resume_point)
        open_items = "; ".join(item.text for item in progress.open_items)
        return f"progress updated; open items: {open_items or 'none'}"

    return update_progress


def _which(progress: Progress, item: str) -> int | str:
    """The item the model named: its exact text first, else its 1-based number, else a part."""
    wanted = one_line(item).casefold()
    if any(entry.text.casefold() == wanted for entry in progress.checklist):
        return item
    if not wanted.isdecimal():
        return item
    count = len(progress.checklist)
    if not 1 <= int(wanted) <= count:
        known = f"items 1 to {count}" if count else "no items"
        raise ToolError(f"no checklist item {int(wanted)}; the checklist has {known}")
    return int(wanted) - 1
