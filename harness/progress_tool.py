"""The tool through which the agent keeps progress.md: tick items, add items, set the resume point.

Changes are made on the loop's :class:`Progress` and saved (atomically) when the round is recorded,
so a session that is cut off leaves progress.md as the last completed round left it.
"""

from __future__ import annotations

from harness.errors import ToolError
from harness.progress import Progress
from harness.tools import Tool, tool


def progress_tool(progress: Progress) -> Tool:
    """An ``update_progress`` tool bound to ``progress``."""

    @tool(name="update_progress")
    def update_progress(
        done: list[str] | None = None,
        add: list[str] | None = None,
        resume_point: str | None = None,
    ) -> str:
        """Update the progress notes that the next session starts from.

        Args:
            done: Checklist items now finished, by their exact text or 1-based number.
            add: New checklist items still to do.
            resume_point: Where the next session should pick up, in a sentence or two.
        """
        for item in add or ():
            progress.add_item(item)
        for item in done or ():
            progress.mark_done(
                _index(item, len(progress.checklist)) if item.strip().isdigit() else item
            )
        if resume_point is not None:
            progress.set_resume_point(resume_point)
        open_items = [i.text for i in progress.checklist if not i.done]
        return "progress updated; open items: " + ("; ".join(open_items) or "none")

    return update_progress


def _index(number: str, count: int) -> int:
    """The 0-based index of the 1-based item ``number`` the model named."""
    if not 1 <= int(number) <= count:
        raise ToolError(f"no checklist item {int(number)}; the checklist has items 1 to {count}")
    return int(number) - 1
