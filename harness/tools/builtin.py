"""The tools every agent gets: read, write and edit files, list, search, run a command, submit.

Their names and argument names are part of the public interface. Every path goes through
:func:`~harness.tools.paths.resolve_in_workspace`; writes also through the protect globs.
"""

from __future__ import annotations

import difflib
import io
import itertools
import os
import re
import stat
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

from harness.core.errors import ToolError
from harness.core.nofollow import read_up_to
from harness.core.text import truncate
from harness.sandbox import default_sandbox
from harness.tools.confined_io import (
    open_confined,
    read_bytes_head,
    read_confined,
    write_confined,
)
from harness.tools.paths import relative_path, resolve_in_workspace, shown, writable
from harness.tools.pattern import LinePattern, compile_pattern
from harness.tools.toolkit import Tool, ToolContext, ToolResult, tool

MAX_LIST_ENTRIES = 500
MAX_SEARCH_MATCHES = 100
MAX_READ_BYTES = 10_000_000  # larger files are read in line ranges
BINARY_SNIFF_BYTES = 8192  # a NUL byte among a file's first bytes marks it binary
MAX_LINE_CHARS = 300  # of one search match
EDIT_CONTEXT_LINES = 3  # shown around an edit
SKIPPED_DIRS = frozenset(
    {".git", ".hg", ".svn", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache",
     ".tox", ".venv", "venv", "node_modules"}
)  # fmt: skip
"""Directories list_files and search do not descend into (list them explicitly to look inside)."""


@tool
def read_file(
    ctx: ToolContext, path: str, start_line: int | None = None, end_line: int | None = None
) -> str:
    """Read a text file, whole or from start_line to end_line (from 1); lines come numbered (not
    part of the file)."""
    target = _existing(ctx, path, want_file=True)
    rel = relative_path(ctx, target)
    first = 1 if start_line is None else start_line
    if first < 1:
        raise ToolError(f"start_line must be 1 or more, got {start_line}")
    if end_line is not None and end_line < first:
        raise ToolError(f"end_line ({end_line}) is before start_line ({first})")
    whole_file = start_line is None and end_line is None
    with _open_text(ctx, target, rel, whole_file=whole_file) as handle:
        lines = enumerate(handle, 1)
        before = sum(1 for _ in itertools.islice(lines, first - 1))
        wanted = itertools.islice(lines, None if end_line is None else end_line - first + 1)
        shown_lines = _numbered(wanted)
        total = before + len(shown_lines) + sum(1 for _ in lines)
    if first > max(total, 1):
        raise ToolError(f"start_line {first} is past the end of {rel} ({total} lines)")
    ctx.files_touched.add(rel)
    if total == 0:
        return f"({rel} is empty)"
    last = total if end_line is None else min(end_line, total)
    whole = first == 1 and last == total
    return "\n".join(shown_lines) + ("" if whole else f"\n(lines {first}-{last} of {total})")


@tool
def write_file(ctx: ToolContext, path: str, content: str) -> str:
    """Create a file or replace all of its content (missing folders are created)."""
    target = resolve_in_workspace(ctx, path)
    rel = writable(ctx, target)
    if target.is_dir():
        raise ToolError(f"{rel} is a directory")
    verb = "overwrote" if target.exists() else "created"
    write_confined(ctx.workspace, target, content)
    ctx.files_touched.add(rel)
    ctx.files_written.add(rel)
    return f"{verb} {rel} ({len(content)} characters, {_line_count(content)} lines)"


@tool
def edit_file(ctx: ToolContext, path: str, old: str, new: str) -> str:
    """Replace the text `old` with `new` in a file; `old` must occur exactly once, whitespace
    included."""
    target = _existing(ctx, path, want_file=True)
    rel = writable(ctx, target)
    if not old:
        raise ToolError("old is empty; to create or replace a whole file use write_file")
    if old == new:
        raise ToolError("old and new are the same; nothing would change")
    with read_confined(ctx.workspace, target, errors="surrogateescape", newline="") as handle:
        text = handle.read()
    if old not in text and "\r\n" in text and "\r\n" not in old:
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
    count = text.count(old)
    if count == 0:
        raise ToolError(f"old was not found in {rel}{_closest_line_hint(text, old)}")
    if count > 1:
        lines = _occurrence_lines(text, old)
        raise ToolError(
            f"old occurs {count} times in {rel} (lines {lines}); "
            "include more surrounding text so that it occurs once"
        )
    start = text.index(old)
    updated = text[:start] + new + text[start + len(old) :]
    write_confined(ctx.workspace, target, updated, errors="surrogateescape")
    ctx.files_touched.add(rel)
    ctx.files_written.add(rel)
    first = text.count("\n", 0, start) + 1
    return f"edited {rel}:\n" + _excerpt(updated, first, first + new.count("\n"))


@tool
def list_files(ctx: ToolContext, path: str = ".") -> str:
    """List the files under a folder, recursively and sorted.

    Caches, virtual environments and version-control directories are named but not entered.
    """
    target = _existing(ctx, path, want_file=False)
    if target.is_file():
        return relative_path(ctx, target)
    entries = sorted(
        relative_path(ctx, entry) + {"file": "", "empty": "/", "skipped": "/ (not listed)"}[kind]
        for entry, kind in _walk(target)
    )
    if not entries:
        return f"({path} is an empty directory)"
    more = len(entries) - MAX_LIST_ENTRIES
    marker = f"\n[... {more} more entries not shown; list a subdirectory]" if more > 0 else ""
    return "\n".join(entries[:MAX_LIST_ENTRIES]) + marker


@tool
def search(ctx: ToolContext, pattern: str, path: str = ".") -> str:
    """Search a file or folder line by line for a regular expression (RE2 syntax: no
    backreferences or lookaround); matches come as `file:line: text`."""
    compiled = compile_pattern(pattern)
    target = _existing(ctx, path, want_file=False)
    files = [target] if target.is_file() else [p for p, kind in _walk(target) if kind == "file"]
    deadline = time.monotonic() + ctx.search_timeout
    try:
        found = list(
            itertools.islice(_matches(ctx, compiled, files, deadline), MAX_SEARCH_MATCHES + 1)
        )
    except TimeoutError:
        raise ToolError(
            f"search for {shown(pattern)} in {shown(path)} stopped after {ctx.search_timeout:g}s; "
            "narrow the path or simplify the pattern"
        ) from None
    if not found:
        return f"no matches for {shown(pattern)} in {path}"
    marker = ""
    if len(found) > MAX_SEARCH_MATCHES:
        found = found[:MAX_SEARCH_MATCHES]
        marker = f"\n[... stopped after {MAX_SEARCH_MATCHES} matches; narrow the pattern or path]"
    return "\n".join(found) + marker


@tool
def run_shell(ctx: ToolContext, command: str, timeout: float | None = None) -> ToolResult:
    """Run a /bin/sh command in the workspace; no network, only the workspace is writable.

    Args:
        timeout: Seconds before it is killed; default 120.
    """
    if not command.strip():
        raise ToolError("command is empty")
    limit = ctx.shell_timeout if timeout is None else timeout
    if not limit > 0:
        raise ToolError(f"timeout must be a positive number of seconds, got {timeout}")
    ctx.commands_run.append(command)
    cap = ctx.max_output_chars
    timeout = min(limit, ctx.max_shell_timeout)
    left = ctx.time_left() if ctx.time_left is not None else None
    if left is not None:  # the run's time budget cuts a command too
        timeout = min(timeout, max(left, 0.05))
    sandbox = ctx.sandbox or default_sandbox()
    result = sandbox.run(
        command,
        cwd=ctx.workspace,
        timeout=timeout,
        env=ctx.command_env(),
        max_output=cap,
        session=True,
    )
    status = f"[{result.status}]\n"
    body = truncate(result.output, cap - len(status), total=result.output_chars)
    output = status + (body if result.output else "(no output)")
    # A failing command is an observation like any other; a timeout or a limit is a failed call.
    failed = result.timed_out or result.limit is not None
    return ToolResult(output, is_error=failed, exit_code=result.exit_code)


@tool
def submit(summary: str) -> ToolResult:
    """End your session once the work is done and checked.

    Args:
        summary: What you did and how you verified it.
    """
    return ToolResult(summary, final=True)


def default_tools() -> list[Tool]:
    """The built-in tools, in the order the model sees them."""
    return [read_file, write_file, edit_file, list_files, search, run_shell, submit]


def _existing(ctx: ToolContext, path: str, *, want_file: bool) -> Path:
    target = resolve_in_workspace(ctx, path)
    try:
        mode = target.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        raise ToolError(f"{shown(path)} does not exist{_similar_names_hint(target)}") from None
    if want_file and stat.S_ISDIR(mode):
        raise ToolError(f"{shown(path)} is a directory; use list_files to see what it holds")
    if want_file and not stat.S_ISREG(mode):  # opening a named pipe would wait for a writer
        raise ToolError(f"{shown(path)} is not a regular file (a named pipe, socket or device)")
    return target


def _open_text(ctx: ToolContext, target: Path, rel: str, *, whole_file: bool) -> IO[str]:
    """``target`` open for reading as text, once its size (when read whole) and its first bytes
    (no NUL: not binary) are checked, all through one confined open. A file no longer than the
    bytes sniffed is read by then: its text comes from them."""
    fd = open_confined(ctx.workspace, target, os.O_RDONLY)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):  # swapped since it was checked
            raise ToolError(f"{rel} is not a regular file (a named pipe, socket or device)")
        if whole_file and info.st_size > MAX_READ_BYTES:
            raise ToolError(
                f"{rel} is {info.st_size} bytes; read it in ranges (start_line, end_line)"
            )
        head = read_up_to(fd, BINARY_SNIFF_BYTES)
        if b"\0" in head:
            raise ToolError(f"{rel} is a binary file ({info.st_size} bytes); not shown")
        if len(head) < BINARY_SNIFF_BYTES:  # the end of the file was reached
            os.close(fd)
            return io.StringIO(head.decode("utf-8", errors="replace"), newline=None)
        os.lseek(fd, 0, os.SEEK_SET)
        return open(fd, encoding="utf-8", errors="replace")  # noqa: SIM115
    except BaseException:
        os.close(fd)
        raise


def _similar_names_hint(target: Path) -> str:
    if not target.parent.is_dir():
        return ""
    similar = difflib.get_close_matches(target.name, os.listdir(target.parent), n=3)
    return f"; similar names there: {', '.join(similar)}" if similar else ""


def _numbered(lines: Iterable[tuple[int, str]]) -> list[str]:
    """Lines as read_file shows them: the number, a tab, the line without its newline."""
    return [f"{number:6}\t" + line.rstrip("\n") for number, line in lines]


def _line_count(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _closest_line_hint(text: str, old: str) -> str:
    """Where the model probably meant, so it can correct whitespace or a stale copy."""
    hint = ""
    if re.match(r"\s*\d+\t", old):
        hint = "; leave out the line numbers read_file shows"
    wanted = next((line.strip() for line in old.splitlines() if line.strip()), "")[:200]
    lines = text.splitlines()[:20_000]
    candidates = [line.strip()[:200] for line in lines]
    best = difflib.get_close_matches(wanted, candidates, n=1, cutoff=0.6) if wanted else []
    if best:
        number = candidates.index(best[0]) + 1
        hint += f"; the closest line is {number}: {shown(lines[number - 1])}"
    return hint


def _occurrence_lines(text: str, old: str, limit: int = 10) -> str:
    starts = [match.start() for match in re.finditer(re.escape(old), text)][:limit]
    return ", ".join(str(text.count("\n", 0, start) + 1) for start in starts)


def _excerpt(text: str, first: int, last: int) -> str:
    lines = text.splitlines()
    low = max(first - EDIT_CONTEXT_LINES, 1)
    high = min(last + EDIT_CONTEXT_LINES, len(lines), low + 40)
    return "\n".join(_numbered((n, lines[n - 1]) for n in range(low, high + 1)))


def _walk(top: Path) -> Iterator[tuple[Path, str]]:
    """Files, empty directories and directories not entered (SKIPPED_DIRS, symlinks) under top.

    Names are sorted in each directory, so the order does not depend on the file system.
    """
    for dirpath, dirnames, filenames in os.walk(top):
        here = Path(dirpath)
        if here != top and not dirnames and not filenames:
            yield here, "empty"
        dirnames.sort()  # in place: os.walk then enters them in this (deterministic) order
        skipped = [name for name in dirnames if name in SKIPPED_DIRS or (here / name).is_symlink()]
        for name in skipped:
            yield here / name, "skipped"
        dirnames[:] = [name for name in dirnames if name not in skipped]
        for name in sorted(filenames):
            yield here / name, "file"


def _matches(
    ctx: ToolContext, compiled: LinePattern, files: list[Path], deadline: float
) -> Iterator[str]:
    """Matching lines as ``file:line: text``; TimeoutError once ``deadline`` has passed."""
    for file in files:
        if not file.is_file() or not (resolved := file.resolve()).is_relative_to(ctx.workspace):
            continue  # a broken symlink, or one leading out of the workspace
        if b"\0" in read_bytes_head(ctx.workspace, resolved, BINARY_SNIFF_BYTES):
            continue  # a binary file
        rel = relative_path(ctx, file)
        with read_confined(ctx.workspace, resolved) as handle:
            for number, line in enumerate(handle, 1):
                if time.monotonic() >= deadline:
                    raise TimeoutError
                text = line.rstrip("\n")
                if compiled.search(text):
                    cut = " [...]" if len(text) > MAX_LINE_CHARS else ""
                    yield f"{rel}:{number}: {text[:MAX_LINE_CHARS]}{cut}"
