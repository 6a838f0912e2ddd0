"""The file tools cannot be led outside the workspace: hard links, symlinks on the way, .git."""

from __future__ import annotations

import os
import resource
from pathlib import Path

import pytest

from harness.core.errors import ToolError
from harness.models.base import ToolCall
from harness.tools.builtin import default_tools
from harness.tools.confined_io import open_confined
from harness.tools.toolkit import Toolbox, ToolContext


def call(ctx: ToolContext, name: str, **arguments: object) -> str:
    return (
        Toolbox(default_tools())
        .execute(ToolCall(id="1", name=name, arguments=arguments), ctx)
        .output
    )


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    (tmp_path / "ws").mkdir()
    return ToolContext(workspace=tmp_path / "ws")


def test_a_file_with_a_second_hard_link_is_not_written(ctx: ToolContext) -> None:
    outside = ctx.workspace.parent / "outside.txt"
    outside.write_text("kept\n")
    os.link(outside, ctx.workspace / "linked.txt")

    for output in (
        call(ctx, "write_file", path="linked.txt", content="forged\n"),
        call(ctx, "edit_file", path="linked.txt", old="kept", new="forged"),
    ):
        assert output.startswith("error: linked.txt has 2 hard links")
    assert outside.read_text() == "kept\n"


def test_writes_under_git_or_harness_are_refused(ctx: ToolContext) -> None:
    (ctx.workspace / ".git").mkdir()
    for path in (".git/config", "sub/.git/config", ".harness/x.lock", ".harness/runs/r/e.jsonl",
                 ".harness/loop.escalation.md", ".harness/progress/loop.md"):  # fmt: skip
        output = call(ctx, "write_file", path=path, content="[core]\nfsmonitor = evil\n")
        assert output.startswith(f"error: {path} is version-control or run state"), output
    assert list((ctx.workspace / ".git").iterdir()) == []
    assert not (ctx.workspace / "sub").exists()


def test_a_symlink_on_the_way_is_never_followed_by_the_open(ctx: ToolContext) -> None:
    outside = ctx.workspace.parent / "elsewhere"
    outside.mkdir()
    (ctx.workspace / "d").symlink_to(outside)

    with pytest.raises(ToolError, match="a symlink .* is on the path"):
        open_confined(ctx.workspace, ctx.workspace / "d" / "f.txt", os.O_WRONLY | os.O_CREAT)
    with pytest.raises(ToolError, match="a symlink .* is on the path"):
        open_confined(ctx.workspace, ctx.workspace / "d", os.O_RDONLY)
    assert list(outside.iterdir()) == []


def test_parents_are_created_and_a_named_pipe_does_not_hang(ctx: ToolContext) -> None:
    assert call(ctx, "write_file", path="a/b/c.txt", content="x") == (
        "created a/b/c.txt (1 characters, 1 lines)"
    )
    os.mkfifo(ctx.workspace / "pipe")
    assert call(ctx, "write_file", path="pipe", content="x") == (
        "error: pipe is a named pipe without a reader; not opened"
    )


@pytest.mark.parametrize("pattern", ["(a{1000}){1000}", "((x{99}){99}){99}", "\\pL{1000}"])
def test_a_regex_bomb_is_an_error_observation_and_memory_stays_flat(
    ctx: ToolContext, pattern: str
) -> None:
    (ctx.workspace / "f.txt").write_text("aaaa\n")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    output = call(ctx, "search", pattern=pattern)

    assert output.startswith(f"error: regular expression {pattern!r} cannot be used: ")
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kb < 50_000


def test_ordinary_counted_patterns_still_search(ctx: ToolContext) -> None:
    (ctx.workspace / "f.txt").write_text("date 2026-11-30\nsha " + "ab" * 20 + "\n")

    assert call(ctx, "search", pattern=r"\d{4}-\d{2}-\d{2}") == "f.txt:1: date 2026-11-30"
    assert call(ctx, "search", pattern="[0-9a-f]{40}") == "f.txt:2: sha " + "ab" * 20
