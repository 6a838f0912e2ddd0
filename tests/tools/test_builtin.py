"""The built-in tools on a real workspace: files, search, shell, submit, confinement, protection."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Literal

import pytest

from harness.models.base import ToolCall
from harness.sandbox import Sandbox
from harness.tools.builtin import (
    BINARY_SNIFF_BYTES,
    MAX_LIST_ENTRIES,
    MAX_SEARCH_MATCHES,
    default_tools,
)
from harness.tools.pattern import RE2_SYNTAX
from harness.tools.toolkit import Toolbox, ToolContext, ToolResult
from tests.conftest import alive

BOX = Toolbox(default_tools())


def call(ctx: ToolContext, name: str, **arguments: object) -> ToolResult:
    return BOX.execute(ToolCall(name, arguments), ctx)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "app.py").write_text(
        "def add(a, b):\n    return a - b\n\nprint(add(1, 2))\n"
    )
    (workspace / "tests").mkdir()
    (workspace / "tests" / "test_app.py").write_text("def test_add():\n    assert add(1, 2) == 3\n")
    (workspace / "README.md").write_text("# demo\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("secret add\n")
    return ToolContext(workspace=workspace, protect=("tests/**",), shell_timeout=30)


# read_file


def test_read_file_numbers_lines_and_records_the_path(ctx: ToolContext) -> None:
    result = call(ctx, "read_file", path="src/app.py")
    assert result == ToolResult(
        "     1\tdef add(a, b):\n     2\t    return a - b\n     3\t\n     4\tprint(add(1, 2))"
    )
    assert ctx.files_touched == {"src/app.py"}


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        (2, 3, "     2\t    return a - b\n     3\t\n(lines 2-3 of 4)"),
        (4, None, "     4\tprint(add(1, 2))\n(lines 4-4 of 4)"),
        (None, 1, "     1\tdef add(a, b):\n(lines 1-1 of 4)"),
        (3, 99, "     3\t\n     4\tprint(add(1, 2))\n(lines 3-4 of 4)"),
    ],
)
def test_read_file_ranges(
    ctx: ToolContext, start: int | None, end: int | None, expected: str
) -> None:
    assert (
        call(ctx, "read_file", path="src/app.py", start_line=start, end_line=end).output == expected
    )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"start_line": 5}, "error: start_line 5 is past the end of src/app.py (4 lines)"),
        ({"start_line": 0}, "error: start_line must be 1 or more, got 0"),
        ({"start_line": 3, "end_line": 2}, "error: end_line (2) is before start_line (3)"),
    ],
)
def test_read_file_out_of_range(ctx: ToolContext, arguments: dict, message: str) -> None:
    assert call(ctx, "read_file", path="src/app.py", **arguments) == ToolResult(message, True)


def test_read_file_refusals(ctx: ToolContext) -> None:
    (ctx.workspace / "blob.bin").write_bytes(b"\x89PNG\0\0\0data")
    (ctx.workspace / "empty.txt").write_text("")
    assert call(ctx, "read_file", path="empty.txt").output == "(empty.txt is empty)"
    binary = call(ctx, "read_file", path="blob.bin")
    assert (binary.is_error, binary.output) == (
        True,
        "error: blob.bin is a binary file (11 bytes); not shown",
    )
    folder = call(ctx, "read_file", path="src")
    assert folder.is_error
    assert "is a directory; use list_files" in folder.output
    missing = call(ctx, "read_file", path="src/ap.py")
    assert missing == ToolResult(
        "error: 'src/ap.py' does not exist; similar names there: app.py", True
    )


@pytest.mark.timeout(10)
@pytest.mark.parametrize("name", ["read_file", "edit_file"])
def test_a_named_pipe_is_refused_rather_than_waited_on(ctx: ToolContext, name: str) -> None:
    os.mkfifo(ctx.workspace / "pipe")
    arguments = {"old": "a", "new": "b"} if name == "edit_file" else {}

    result = call(ctx, name, path="pipe", **arguments)

    assert result == ToolResult(
        "error: 'pipe' is not a regular file (a named pipe, socket or device)", True
    )


def test_read_file_accepts_an_absolute_path_inside(ctx: ToolContext) -> None:
    assert call(ctx, "read_file", path=str(ctx.workspace / "README.md")).output == "     1\t# demo"


def test_huge_files_are_read_in_ranges(ctx: ToolContext) -> None:
    (ctx.workspace / "big.log").write_text("line\n" * 2_100_000)
    whole = call(ctx, "read_file", path="big.log")
    assert whole == ToolResult(
        "error: big.log is 10500000 bytes; read it in ranges (start_line, end_line)", True
    )
    part = call(ctx, "read_file", path="big.log", start_line=2_000_000, end_line=2_000_001)
    assert part.output == ("2000000\tline\n2000001\tline\n(lines 2000000-2000001 of 2100000)")


@pytest.mark.parametrize(
    "size", [1, BINARY_SNIFF_BYTES - 1, BINARY_SNIFF_BYTES, BINARY_SNIFF_BYTES + 1]
)
def test_a_file_shorter_or_longer_than_the_sniffed_bytes_reads_the_same(
    ctx: ToolContext, size: int
) -> None:
    """Line ends (CRLF, CR), bad UTF-8 and a character cut by the sniff's end read alike."""
    ctx.max_output_chars = 100_000  # the whole file in one observation
    pattern = b"ab\r\nc\xffd\re\xc3\xa9\n"
    data = (pattern * (size // len(pattern) + 1))[:size]
    (ctx.workspace / "mixed.txt").write_bytes(data)
    text = data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    lines = lines[:-1] if text.endswith("\n") else lines
    expected = "\n".join(f"{number:6}\t{line}" for number, line in enumerate(lines, 1))
    assert call(ctx, "read_file", path="mixed.txt").output == expected
    tail = call(ctx, "read_file", path="mixed.txt", start_line=len(lines))
    assert tail.output.split("\n")[0] == f"{len(lines):6}\t{lines[-1]}"


# write_file


def test_write_file_creates_parents_and_overwrites(ctx: ToolContext) -> None:
    created = call(ctx, "write_file", path="pkg/sub/mod.py", content="a = 1\r\nb = 2")
    assert created == ToolResult("created pkg/sub/mod.py (12 characters, 2 lines)")
    assert (ctx.workspace / "pkg/sub/mod.py").read_bytes() == b"a = 1\r\nb = 2"
    again = call(ctx, "write_file", path="pkg/sub/mod.py", content="")
    assert again.output == "overwrote pkg/sub/mod.py (0 characters, 0 lines)"
    assert (ctx.workspace / "pkg/sub/mod.py").read_text() == ""
    assert ctx.files_touched == {"pkg/sub/mod.py"}
    assert call(ctx, "write_file", path="src", content="x").output == "error: src is a directory"


def test_huge_content_is_written_and_read_back_capped(tmp_path: Path) -> None:
    ctx = ToolContext(workspace=tmp_path, max_output_chars=2_000)
    content = "start\n" + "x" * 5_000_000 + "\nend\n"
    written = call(ctx, "write_file", path="huge.txt", content=content)
    assert written.output == "created huge.txt (5000011 characters, 3 lines)"
    assert (tmp_path / "huge.txt").read_text() == content
    read = call(ctx, "read_file", path="huge.txt")
    assert len(read.output) <= 2_000
    assert read.output.startswith("     1\tstart\n     2\txxx")
    assert read.output.endswith("xxx\n     3\tend")


# edit_file


def test_edit_file_replaces_a_unique_occurrence(ctx: ToolContext) -> None:
    result = call(ctx, "edit_file", path="src/app.py", old="return a - b", new="return a + b")
    assert not result.is_error
    assert result.output.startswith("edited src/app.py:\n")
    assert "     2\t    return a + b" in result.output
    assert (ctx.workspace / "src/app.py").read_text().splitlines()[1] == "    return a + b"
    assert ctx.files_touched == {"src/app.py"}


def test_edit_file_missing_old_shows_the_closest_line(ctx: ToolContext) -> None:
    result = call(ctx, "edit_file", path="src/app.py", old="  return a-b", new="x")
    assert result == ToolResult(
        "error: old was not found in src/app.py; the closest line is 2: '    return a - b'", True
    )
    numbered = call(ctx, "edit_file", path="src/app.py", old="     2\t    return a - b", new="")
    assert "leave out the line numbers read_file shows" in numbered.output
    assert ctx.files_touched == set()


def test_edit_file_ambiguous_old_counts_occurrences(ctx: ToolContext) -> None:
    before = (ctx.workspace / "src/app.py").read_text()
    result = call(ctx, "edit_file", path="src/app.py", old="add", new="plus")
    assert result.is_error
    assert result.output == (
        "error: old occurs 2 times in src/app.py (lines 1, 4); "
        "include more surrounding text so that it occurs once"
    )
    assert (ctx.workspace / "src/app.py").read_text() == before


def test_edit_file_refuses_empty_or_identical_text(ctx: ToolContext) -> None:
    assert "use write_file" in call(ctx, "edit_file", path="src/app.py", old="", new="x").output
    same = call(ctx, "edit_file", path="src/app.py", old="add", new="add")
    assert same == ToolResult("error: old and new are the same; nothing would change", True)


def test_edit_file_keeps_crlf_and_undecodable_bytes(ctx: ToolContext) -> None:
    target = ctx.workspace / "win.txt"
    target.write_bytes(b"one\r\ntwo \xff\r\nthree\r\n")
    result = call(ctx, "edit_file", path="win.txt", old="one\ntwo", new="1\n2")
    assert not result.is_error, result.output
    assert target.read_bytes() == b"1\r\n2 \xff\r\nthree\r\n"


# list_files


def test_list_files_sorted_skipping_git(ctx: ToolContext) -> None:
    (ctx.workspace / ".git" / "objects").mkdir(parents=True)
    (ctx.workspace / ".git" / "HEAD").write_text("ref\n")
    (ctx.workspace / "empty").mkdir()
    os.symlink(ctx.workspace / "src", ctx.workspace / "alias")
    assert call(ctx, "list_files").output == "\n".join(
        [
            ".git/ (not listed)",
            "README.md",
            "alias/ (not listed)",
            "empty/",
            "src/app.py",
            "tests/test_app.py",
        ]
    )
    assert call(ctx, "list_files", path="alias").output == "src/app.py"
    assert call(ctx, "list_files", path="src").output == "src/app.py"
    assert call(ctx, "list_files", path="README.md").output == "README.md"
    assert call(ctx, "list_files", path="empty").output == "(empty is an empty directory)"
    assert call(ctx, "list_files", path="nope").is_error


def test_list_files_is_bounded_with_a_marker(ctx: ToolContext) -> None:
    many = ctx.workspace / "many"
    many.mkdir()
    for index in range(MAX_LIST_ENTRIES + 20):
        (many / f"f{index:04}.txt").touch()
    lines = call(ctx, "list_files", path="many").output.splitlines()
    assert len(lines) == MAX_LIST_ENTRIES + 1
    assert lines[0] == "many/f0000.txt"
    assert lines[-1] == "[... 20 more entries not shown; list a subdirectory]"


# search


def test_search_reports_file_line_text(ctx: ToolContext) -> None:
    (ctx.workspace / ".git").mkdir()
    (ctx.workspace / ".git" / "config").write_text("add = yes\n")
    (ctx.workspace / "blob.bin").write_bytes(b"add\0add")
    os.symlink(ctx.workspace.parent / "outside" / "secret.txt", ctx.workspace / "leak.txt")
    assert call(ctx, "search", pattern=r"add\(1").output == "\n".join(
        ["src/app.py:4: print(add(1, 2))", "tests/test_app.py:2:     assert add(1, 2) == 3"]
    )
    assert call(ctx, "search", pattern="^def", path="tests").output == (
        "tests/test_app.py:1: def test_add():"
    )
    assert call(ctx, "search", pattern="return", path="src/app.py").output == (
        "src/app.py:2:     return a - b"
    )
    assert call(ctx, "search", pattern="zebra").output == "no matches for 'zebra' in ."
    assert call(ctx, "search", pattern="secret").output == "no matches for 'secret' in ."


def test_search_invalid_regex_and_bounded_matches(ctx: ToolContext) -> None:
    bad = call(ctx, "search", pattern="def (")
    assert bad == ToolResult(
        "error: regular expression 'def (' cannot be used: missing ): def (; " + RE2_SYNTAX,
        True,
    )
    (ctx.workspace / "log.txt").write_text("hit\n" * (MAX_SEARCH_MATCHES + 50))
    lines = call(ctx, "search", pattern="hit").output.splitlines()
    assert len(lines) == MAX_SEARCH_MATCHES + 1
    assert lines[-1].startswith(f"[... stopped after {MAX_SEARCH_MATCHES} matches")


def test_search_walks_directories_in_sorted_order(tmp_path: Path) -> None:
    order = [7, 2, 9, 0, 5, 3, 8, 1, 6, 4]
    for number in order:
        (tmp_path / f"dir{number}").mkdir()
        (tmp_path / f"dir{number}" / "hit.txt").write_text("hit\n")
        (tmp_path / f"file{number}.txt").write_text("hit\n")

    found = call(ToolContext(workspace=tmp_path), "search", pattern="hit").output.splitlines()

    files = [f"file{n}.txt:1: hit" for n in range(10)]
    assert found == files + [f"dir{n}/hit.txt:1: hit" for n in range(10)]


@pytest.mark.timeout(20)
def test_search_runs_nested_repetition_in_linear_time_and_stops_at_its_deadline(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.txt").write_text(("a" * 40 + "!\n") * 5)
    ctx = ToolContext(workspace=tmp_path)

    start = time.monotonic()
    assert call(ctx, "search", pattern="(a|a)+$").output == "no matches for '(a|a)+$' in ."
    assert call(ctx, "search", pattern="(a+)+$").output == "no matches for '(a+)+$' in ."
    assert time.monotonic() - start < 10  # backtracking would take years, not seconds

    (tmp_path / "many.txt").write_text("line\n" * 200_000)
    hurried = ToolContext(workspace=tmp_path, search_timeout=0.01)
    result = call(hurried, "search", pattern="absent")
    assert result.is_error
    assert result.output == (
        "error: search for 'absent' in '.' stopped after 0.01s; "
        "narrow the path or simplify the pattern"
    )


# confinement and protection

OUTSIDE_CASES = ["../x", "/etc/passwd", "link"]
FILE_TOOLS = {
    "read_file": {},
    "write_file": {"content": "pwned"},
    "edit_file": {"old": "secret", "new": "pwned"},
    "list_files": {},
    "search": {"pattern": "secret"},
}


@pytest.mark.parametrize("name", sorted(FILE_TOOLS))
@pytest.mark.parametrize("path", OUTSIDE_CASES)
def test_every_file_tool_refuses_paths_outside(ctx: ToolContext, name: str, path: str) -> None:
    outside = ctx.workspace.parent / "outside"
    target = outside / "secret.txt" if name in ("read_file", "write_file", "edit_file") else outside
    os.symlink(target, ctx.workspace / "link")
    result = call(ctx, name, path=path, **FILE_TOOLS[name])
    assert result.is_error
    assert result.output.startswith(f"error: path '{path}' is outside the workspace")
    assert "secret" not in result.output.replace("secret.txt", "")
    assert (outside / "secret.txt").read_text() == "secret add\n"
    assert ctx.files_touched == set()


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("write_file", {"content": "def test_add(): pass\n"}),
        ("edit_file", {"old": "3", "new": "4"}),
    ],
)
def test_protected_paths_are_refused(ctx: ToolContext, name: str, arguments: dict) -> None:
    before = (ctx.workspace / "tests/test_app.py").read_text()
    result = call(ctx, name, path="tests/test_app.py", **arguments)
    assert result == ToolResult(
        "error: tests/test_app.py is protected (matches 'tests/**'): the checks rely on it", True
    )
    assert call(ctx, name, path="tests/new_test.py", **arguments).is_error
    assert (ctx.workspace / "tests/test_app.py").read_text() == before
    assert not call(ctx, "read_file", path="tests/test_app.py").is_error  # reading is fine


# run_shell


def test_run_shell_states_the_exit_code_and_runs_in_the_workspace(ctx: ToolContext) -> None:
    ok = call(ctx, "run_shell", command="pwd; echo oops >&2")
    assert ok == ToolResult(f"[exit code 0]\n{ctx.workspace}\noops\n", exit_code=0)
    failed = call(ctx, "run_shell", command="exit 3")
    assert failed == ToolResult("[exit code 3]\n(no output)", exit_code=3)
    assert ctx.commands_run == ["pwd; echo oops >&2", "exit 3"]
    assert call(ctx, "run_shell", command="  ").output == "error: command is empty"
    assert call(ctx, "run_shell", command="true", timeout=-1).is_error
    assert len(ctx.commands_run) == 2


def test_run_shell_timeout_is_capped_by_the_context(tmp_path: Path) -> None:
    ctx = ToolContext(workspace=tmp_path, max_shell_timeout=0.5)
    started = time.monotonic()
    result = call(ctx, "run_shell", command="sleep 30", timeout=3600)
    assert time.monotonic() - started < 20  # not the command's 30 s
    assert result.output.startswith("[timed out after 0.5s (process group killed)]")


def test_run_shell_timeout_kills_the_process_group(tmp_path: Path) -> None:
    ctx = ToolContext(workspace=tmp_path, sandbox=Sandbox("none"))  # host pids: no PID namespace
    started = time.monotonic()
    result = call(
        ctx, "run_shell", command="sleep 1000 & echo $! > child.pid; sleep 1000", timeout=2
    )
    elapsed = time.monotonic() - started
    assert 1.9 < elapsed < 60  # never before the timeout; far less than the command's 1000 s
    assert result.is_error
    assert result.exit_code is None
    assert result.output.startswith("[timed out after 2s (process group killed)]\n")
    child = int((ctx.workspace / "child.pid").read_text())
    deadline = time.monotonic() + 2
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child)


def test_run_shell_truncates_huge_output(tmp_path: Path) -> None:
    ctx = ToolContext(workspace=tmp_path, max_output_chars=5_000)
    command = "echo FIRST; head -c 50000000 /dev/zero | tr '\\0' a; echo; echo LAST"
    result = call(ctx, "run_shell", command=command)
    assert len(result.output) <= 5_000
    assert result.output.startswith("[exit code 0]\nFIRST\naaa")
    assert result.output.endswith("aaa\nLAST\n")
    assert result.exit_code == 0
    body = result.output.removeprefix("[exit code 0]\n")
    counts = re.findall(r"\n\[\.\.\. (\d+) characters truncated \.\.\.\]\n", body)
    assert len(counts) == 1
    kept = len(body) - len(f"\n[... {counts[0]} characters truncated ...]\n")
    assert int(counts[0]) + kept == len("FIRST\n") + 50_000_000 + len("\nLAST\n")
    assert len(result.output) > 4_900  # the room is used, not halved


@pytest.mark.parametrize("backend", ["auto", "none"])
def test_run_shell_passes_only_allow_listed_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: Literal["auto", "none"]
) -> None:
    chosen = {"OPENAI_API_KEY": "sk-one", "VISIBLE_SETTING": "yes"}
    ctx = ToolContext(workspace=tmp_path, env=chosen, sandbox=Sandbox(backend))
    output = call(ctx, "run_shell", command="env").output
    assert "VISIBLE_SETTING=yes" in output  # set on purpose by whoever built the context
    assert "OPENAI_API_KEY" not in output  # a secret's name is dropped all the same
    assert "sk-one" not in output
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-two")
    monkeypatch.setenv("PLAIN_SETTING", "not-passed")
    monkeypatch.setenv("LC_TIME", "C")
    inherited = call(ToolContext(workspace=tmp_path, sandbox=Sandbox(backend)), "run_shell",
                     command="env").output  # fmt: skip
    assert "PLAIN_SETTING" not in inherited  # an allow-list: unnamed variables stay out
    assert "sk-two" not in inherited
    assert "LC_TIME=C" in inherited
    assert f"PATH={os.environ['PATH']}" in inherited or os.environ["PATH"] in inherited


# submit


def test_submit_is_final(ctx: ToolContext) -> None:
    assert call(ctx, "submit", summary="fixed add; tests pass") == ToolResult(
        "fixed add; tests pass", final=True
    )
