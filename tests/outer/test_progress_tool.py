"""update_progress: the agent ticks and adds checklist items and sets the resume point."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.core.errors import ToolError
from harness.memory.progress import Progress
from harness.outer.progress_tool import progress_tool
from harness.tools import ToolContext


def _progress(*items: str) -> Progress:
    progress = Progress(name="demo")
    for item in items:
        progress.add_item(item)
    return progress


def _update(progress: Progress, **arguments: object) -> str:
    """Call the tool's function as the model's arguments would; ToolError propagates."""
    return str(progress_tool(progress).fn(**arguments))


def test_items_are_ticked_by_number_text_or_a_unique_part() -> None:
    progress = _progress("reproduce the failure", "fix parse_date", "add a test", "tidy up")

    reply = _update(progress, done=["1", "FIX PARSE_DATE", "a test"])

    assert [item.done for item in progress.checklist] == [True, True, True, False]
    assert reply == "progress updated; open items: tidy up"


def test_an_item_whose_text_is_a_number_is_ticked_by_its_text() -> None:
    progress = _progress("write docs", "10", "ship")

    _update(progress, done=["10"])
    _update(progress, done=["3"])

    assert [item.text for item in progress.checklist if item.done] == ["10", "ship"]


@pytest.mark.parametrize(
    ("named", "message"),
    [
        ("3", "no checklist item 3; the checklist has items 1 to 2"),
        ("0", "no checklist item 0; the checklist has items 1 to 2"),
        ("²", "'²' matches no item"),
        ("step", "'step' matches several items"),
        ("missing", "'missing' matches no item. Checklist: 1. step a; 2. step b"),
    ],
)
def test_a_name_that_fits_no_single_item_is_a_tool_error(named: str, message: str) -> None:
    progress = _progress("step a", "step b")

    with pytest.raises(ToolError, match="^" + message.replace(".", r"\.")):
        _update(progress, done=[named])

    assert progress.open_items == progress.checklist


def test_a_number_on_an_empty_checklist_says_it_is_empty() -> None:
    with pytest.raises(ToolError, match="^no checklist item 1; the checklist has no items$"):
        _update(Progress(name="demo"), done=["1"])


def test_add_and_done_in_one_call_then_the_resume_point() -> None:
    progress = _progress("old item")

    reply = _update(
        progress, add=["new item", "OLD ITEM"], done=["new item"], resume_point="  next:\n tidy "
    )

    assert [(i.text, i.done) for i in progress.checklist] == [
        ("old item", False),
        ("new item", True),
    ]
    assert progress.resume_point == "next:\ntidy"
    assert reply == "progress updated; open items: old item"


def test_through_the_tool_interface_a_mistake_is_an_error_result(tmp_path: Path) -> None:
    progress = _progress("only item")
    tool = progress_tool(progress)
    ctx = ToolContext(workspace=tmp_path)

    missed = tool.run({"done": ["²"]}, ctx)
    ticked = tool.run('{"done": ["1"]}', ctx)

    assert missed.is_error
    assert missed.output == "error: '²' matches no item. Checklist: 1. only item"
    assert not ticked.is_error
    assert ticked.output == "progress updated; open items: none"
    assert progress.checklist[0].done
