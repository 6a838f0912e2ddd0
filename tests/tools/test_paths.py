"""Confinement to the workspace and protect globs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.core.errors import ConfigError, ToolError
from harness.tools.paths import (
    SHOWN_CHARS,
    check_protect_patterns,
    protecting_pattern,
    relative_path,
    resolve_in_workspace,
    shown,
    writable,
)
from harness.tools.toolkit import ToolContext


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "app.py").write_text("x = 1\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("secret\n")
    return ToolContext(workspace=workspace, protect=("tests/**",))


def test_relative_and_absolute_paths_inside_resolve(ctx: ToolContext) -> None:
    inside = ctx.workspace / "src" / "app.py"
    assert resolve_in_workspace(ctx, "src/app.py") == inside
    assert resolve_in_workspace(ctx, "./src/../src/app.py") == inside
    assert resolve_in_workspace(ctx, str(inside)) == inside
    assert resolve_in_workspace(ctx, "") == ctx.workspace
    assert resolve_in_workspace(ctx, "new/dir/file.txt") == ctx.workspace / "new/dir/file.txt"


@pytest.mark.parametrize("path", ["../x", "src/../../x", "/etc/passwd", "/"])
def test_paths_outside_are_refused(ctx: ToolContext, path: str) -> None:
    with pytest.raises(ToolError, match="is outside the workspace") as caught:
        resolve_in_workspace(ctx, path)
    assert f"path '{path}'" in str(caught.value)


def test_symlink_leading_outside_is_refused_and_named(ctx: ToolContext) -> None:
    os.symlink(ctx.workspace.parent / "outside", ctx.workspace / "link")
    with pytest.raises(ToolError, match="a symlink on it leads to"):
        resolve_in_workspace(ctx, "link/secret.txt")


def test_symlink_inside_the_workspace_is_followed(ctx: ToolContext) -> None:
    os.symlink(ctx.workspace / "src", ctx.workspace / "alias")
    assert resolve_in_workspace(ctx, "alias/app.py") == ctx.workspace / "src" / "app.py"


def test_a_link_deep_or_last_on_a_plain_looking_path_is_still_caught(ctx: ToolContext) -> None:
    """Relative paths without ``..`` take a quick walk; a link anywhere on them must still count."""
    outside = ctx.workspace.parent / "outside"
    os.symlink(outside / "secret.txt", ctx.workspace / "src" / "leak.txt")
    os.symlink(outside, ctx.workspace / "src" / "deeper")
    for path in ("src/leak.txt", "./src//deeper/secret.txt", "src/deeper/missing/x.txt"):
        with pytest.raises(ToolError, match="a symlink on it leads to"):
            resolve_in_workspace(ctx, path)
    assert resolve_in_workspace(ctx, "src//./app.py") == ctx.workspace / "src" / "app.py"
    assert resolve_in_workspace(ctx, "src/app.py/x") == ctx.workspace / "src" / "app.py" / "x"


def test_nul_byte_and_symlink_loop_are_tool_errors(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="NUL byte"):
        resolve_in_workspace(ctx, "a\0b")
    os.symlink("loop", ctx.workspace / "loop")
    with pytest.raises(ToolError, match="cannot be resolved"):
        resolve_in_workspace(ctx, "loop/x")


def test_huge_path_is_quoted_short_in_the_error(ctx: ToolContext) -> None:
    with pytest.raises(ToolError) as caught:
        resolve_in_workspace(ctx, "/" + "x" * 1_000_000)
    assert len(str(caught.value)) < 500


@pytest.mark.parametrize(
    ("pattern", "rel", "protected"),
    [
        ("tests/**", "tests/test_x.py", True),
        ("tests/**", "tests/unit/deep/test_y.py", True),
        ("tests/**", "testsuite/x.py", False),
        ("tests/*.py", "tests/test_x.py", True),
        ("tests/*.py", "tests/sub/test_x.py", False),
        ("tests", "tests/sub/test_x.py", True),
        ("tests/", "tests/conftest.py", True),
        ("./tests/**", "tests/conftest.py", True),
        ("**/conftest.py", "conftest.py", True),
        ("**/conftest.py", "pkg/a/conftest.py", True),
        ("*.lock", "poetry.lock", True),
        ("*.lock", "sub/poetry.lock", False),
        ("test_?.py", "test_a.py", True),
        ("test_?.py", "test_ab.py", False),
        ("a.b", "axb", False),
    ],
)
def test_protect_globs(pattern: str, rel: str, protected: bool) -> None:
    assert (protecting_pattern([pattern], rel) == pattern) is protected


@pytest.mark.parametrize(
    ("rel", "expected"),
    [
        ("hello.txt", "**"),
        ("brief.md", "**"),
        ("sub/deep/x.py", "**"),
        (".harness/work/draft.md", None),
        (".harness/work/notes/a.md", None),
        (".harness/work", "**"),  # the folder itself is not freed, only what is in it
        (".harness/progress/x.md", "**"),
        (".harness/work/keep.lock", "**/*.lock"),  # a later pattern protects again
    ],
)
def test_a_bang_pattern_frees_what_it_matches_until_a_later_pattern(
    rel: str, expected: str | None
) -> None:
    assert protecting_pattern(["**", "!.harness/work/**", "**/*.lock"], rel) == expected


@pytest.mark.parametrize("pattern", ["!", "!/etc/passwd", "!../x"])
def test_a_bang_pattern_must_name_workspace_files(pattern: str) -> None:
    with pytest.raises(ConfigError, match="protect"):
        check_protect_patterns([pattern])


def test_writable_names_the_pattern(ctx: ToolContext) -> None:
    assert writable(ctx, ctx.workspace / "src" / "app.py") == "src/app.py"
    with pytest.raises(ToolError) as caught:
        writable(ctx, ctx.workspace / "tests" / "test_x.py")
    assert str(caught.value) == (
        "tests/test_x.py is protected (matches 'tests/**'): the checks rely on it"
    )


def test_context_resolves_its_workspace(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    ctx = ToolContext(workspace=tmp_path / "ws" / ".." / "ws", protect=["tests"])  # type: ignore[arg-type]
    assert ctx.workspace == (tmp_path / "ws").resolve()
    assert ctx.protect == ("tests",)
    assert ctx.files_touched == set()
    assert ctx.commands_run == []


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"protect": ("/etc/**",)}, "protect"),
        ({"protect": ("../other/**",)}, "protect"),
        ({"protect": ("",)}, "protect"),
        ({"shell_timeout": 0}, "shell_timeout"),
        ({"max_output_chars": -1}, "max_output_chars"),
        ({"search_timeout": 0}, "search_timeout"),
    ],
)
def test_context_rejects_bad_configuration(tmp_path: Path, kwargs: dict, field: str) -> None:
    with pytest.raises(ConfigError, match=f"^{field}:"):
        ToolContext(workspace=tmp_path, **kwargs)


def test_context_rejects_a_missing_workspace(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="workspace: .* is not a directory"):
        ToolContext(workspace=tmp_path / "missing")


def test_a_plain_path_outside_is_not_said_to_go_through_a_symlink(ctx: ToolContext) -> None:
    with pytest.raises(ToolError) as caught:
        resolve_in_workspace(ctx, "../outside/secret.txt")
    assert str(caught.value) == (
        "path '../outside/secret.txt' is outside the workspace; "
        "use paths relative to the workspace root"
    )


def test_a_symlink_outside_is_named_with_its_target(ctx: ToolContext) -> None:
    outside = ctx.workspace.parent / "outside"
    os.symlink(outside, ctx.workspace / "link")
    with pytest.raises(ToolError) as caught:
        resolve_in_workspace(ctx, "link/secret.txt")
    assert str(caught.value) == (
        f"path 'link/secret.txt' is outside the workspace (a symlink on it leads to "
        f"{outside / 'secret.txt'}); use paths relative to the workspace root"
    )


def test_a_long_path_is_shown_cut_to_the_limit() -> None:
    assert SHOWN_CHARS == 200
    assert shown("src/app.py") == "'src/app.py'"
    assert shown("y" * 201) != repr("y" * 201)
    assert shown("x" * SHOWN_CHARS) == repr("x" * SHOWN_CHARS)
    cut = shown("x" * (SHOWN_CHARS + 50))
    assert cut.startswith("'" + "x" * 50)
    assert "x" * (SHOWN_CHARS + 1) not in cut


def test_relative_path_is_posix_and_relative_to_the_workspace(ctx: ToolContext) -> None:
    assert relative_path(ctx, ctx.workspace / "src" / "app.py") == "src/app.py"
    assert relative_path(ctx, ctx.workspace) == "."


def test_the_first_matching_pattern_is_named() -> None:
    patterns = ["docs/**", "*.lock", "**/*.lock", "src"]
    assert protecting_pattern(patterns, "pkg/poetry.lock") == "**/*.lock"
    assert protecting_pattern(patterns, "poetry.lock") == "*.lock"
    assert protecting_pattern(patterns, "src/a/b.py") == "src"
    assert protecting_pattern(patterns, "source/a.py") is None
    assert protecting_pattern([], "anything") is None


@pytest.mark.parametrize(
    ("pattern", "rel", "protected"),
    [
        ("a/**/b.py", "a/b.py", True),
        ("a/**/b.py", "a/x/y/b.py", True),
        ("a/**/b.py", "a/xb.py", False),
        ("a/**", "ab/c", False),
        ("**", "any/thing", True),
        ("src/*", "src/x/y.py", True),  # covers the directory src/x, so all under it
        ("src/*/y.py", "src/x/y.py", True),
        ("src/*/y.py", "src/x/z/y.py", False),
        ("tests/?", "tests/ab", False),
        ("[ab].py", "a.py", False),  # brackets are literal
        ("[ab].py", "[ab].py", True),
        ("x+y", "x+y", True),
        ("x+y", "xxy", False),
        ("src/**.py", "src/a/b.py", True),  # '**' inside a segment spans directories too
        ("src/**.py", "src/a/bpy", False),
    ],
)
def test_more_protect_globs(pattern: str, rel: str, protected: bool) -> None:
    assert (protecting_pattern([pattern], rel) == pattern) is protected


def test_check_protect_patterns_returns_them_and_names_a_bad_one() -> None:
    assert check_protect_patterns(iter(["tests/**", "./conftest.py"])) == (
        "tests/**",
        "./conftest.py",
    )
    assert check_protect_patterns([]) == ()
    for bad, why in [
        ("", "is not a non-empty glob pattern"),
        ("./", "is not a non-empty glob pattern"),
        ("//", "is not a non-empty glob pattern"),
        (3, "is not a non-empty glob pattern"),
        ("/etc/passwd", "must be relative to the workspace"),
        ("a/../../b", "must be relative to the workspace"),
        ("..", "must be relative to the workspace"),
    ]:
        with pytest.raises(ConfigError) as caught:
            check_protect_patterns(["ok/**", bad])  # type: ignore[list-item]
        assert str(caught.value) == f"protect: {bad!r} {why}"
    assert check_protect_patterns(["a..b/**"]) == ("a..b/**",)  # '..' inside a name is fine
