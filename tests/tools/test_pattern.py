"""Search patterns run by RE2: pathological ones return or are refused fast, memory stays flat."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.core.errors import ToolError
from harness.tools.pattern import (
    MAX_LINE_WORK,
    MAX_PATTERN_CHARS,
    MAX_PROGRAM_SIZE,
    compile_pattern,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def measured() -> dict[str, dict[str, object]]:
    """bench/search_patterns.py's records, measured in a process of their own."""
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "search_patterns.py"), "--json"],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    records = [json.loads(line) for line in run.stdout.splitlines()]
    return {str(record["pattern"]): record for record in records}


def test_thirty_pathological_patterns_each_end_within_2s_and_memory_grows_under_100_mb(
    measured: dict[str, dict[str, object]],
) -> None:
    assert len(measured) >= 30
    slow = {p: r["seconds"] for p, r in measured.items() if float(str(r["seconds"])) >= 2}
    assert slow == {}
    grown = max(int(str(r["grown_kb"])) for r in measured.values())
    assert grown < 100_000, f"peak memory grew {grown} kB"


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("(?x)a{1000 000 000}", "invalid perl operator: (?x"),
        ("(a{1000}){1000}", "invalid repetition size: {1000}"),
        ("x{1000}{1000}", "bad repetition operator: {1000}{1000}"),
        ("(a)\\1", "invalid escape sequence: \\1"),
        ("(?P<q>['\"]).*(?P=q)", "invalid perl operator: (?P"),
        ("a(?=b)", "invalid perl operator: (?="),
        ("(?<!a)b", "invalid perl operator: (?<!"),
        ("(?>a+)b", "invalid perl operator: (?>"),
        ("\\pL{1000}", "pattern too large - compile failed"),
    ],
)
def test_what_re2_cannot_run_is_refused_saying_why(
    measured: dict[str, dict[str, object]], pattern: str, reason: str
) -> None:
    record = measured[pattern]
    assert record["outcome"] == "refused"
    said = str(record["said"])
    assert said.startswith(f"error: regular expression {pattern!r} cannot be used: {reason}; ")
    assert "search takes RE2 syntax, which matches in linear time" in said


@pytest.mark.parametrize("pattern", ["\\{1000000000}", "a{1000000000}", "(a|a)+$", "(a+)+$"])
def test_the_old_bombs_search_as_ordinary_patterns(
    measured: dict[str, dict[str, object]], pattern: str
) -> None:
    assert measured[pattern]["outcome"] == "searched"
    assert measured[pattern]["said"] == f"no matches for {pattern!r} in ."


def test_a_program_too_large_or_a_pattern_too_long_is_refused_before_any_search() -> None:
    with pytest.raises(ToolError, match=r"compiles to 8,004 instructions, more than 5,000;"):
        compile_pattern(".{1000}")
    assert MAX_PROGRAM_SIZE == 5_000
    compile_pattern(".{600}")  # 4,804 instructions: allowed
    with pytest.raises(ToolError, match=f"is {MAX_PATTERN_CHARS + 1:,} characters long; the"):
        compile_pattern("a" * (MAX_PATTERN_CHARS + 1))
    compile_pattern("a" * (MAX_PATTERN_CHARS - 10))


def test_a_line_is_searched_as_far_as_the_patterns_size_allows() -> None:
    small, large = compile_pattern("needle"), compile_pattern(".{600}needle")
    assert small.searched_chars == MAX_LINE_WORK // 10  # 10 instructions: two million characters
    assert large.searched_chars == MAX_LINE_WORK // 4_810  # 4,158 characters
    head = "x" * (large.searched_chars - len("needle"))
    assert large.search(head + "needle")
    assert not large.search(head + "xneedle")  # its end lies past what is searched
    assert small.search(head + "xneedle")
    assert not small.search("no such thing")
