"""The agent's search patterns, compiled by RE2: linear time and bounded memory in our process.

A backtracking engine (``re``, ``regex``) expands counted repeats when it compiles
(``\\{1000000000}``, ``(?x)a{1000 000 000}`` each grew the process by gigabytes) and can take
exponential time to match. RE2 compiles to an automaton within :data:`MAX_PATTERN_MEMORY`, caps
each repeat count at 1000 and matches in time linear in the line: at worst (when its DFA runs
out of memory and it falls back to simulating the automaton) the time is the line's length times
the program's size. So a pattern larger than :data:`MAX_PROGRAM_SIZE` instructions is refused,
and a line is searched in its first ``MAX_LINE_WORK // program size`` characters (two million
for an ordinary pattern of ten instructions, 4,000 for the largest): one line costs a bounded
time, and the search's deadline bounds the lines. What RE2 cannot run (backreferences,
lookaround, ``(?x)``, atomic groups) is refused with a message saying so, never handed to
another engine.
"""

from __future__ import annotations

from typing import Protocol

import re2

from harness.core.errors import ToolError
from harness.tools.paths import shown

MAX_PATTERN_CHARS = 5_000
MAX_PATTERN_MEMORY = 8 << 20
"""Bytes RE2 may use for one pattern: its compiled program and its matching caches."""
MAX_PROGRAM_SIZE = 5_000
"""Instructions of a compiled pattern; the slowest match costs about this much per character."""
MAX_LINE_WORK = 20_000_000
"""Program size times characters searched in one line: about 0.1 s at RE2's slowest."""

RE2_SYNTAX = (
    "search takes RE2 syntax, which matches in linear time: no backreferences (\\1), "
    "lookaround ((?=, (?!, (?<=, (?<!), (?x) or possessive repeats, and repeat counts of at "
    "most 1000"
)


class _Compiled(Protocol):
    def search(self, text: str) -> object | None: ...


class LinePattern:
    """A compiled search pattern: :meth:`search` tells whether it occurs in a line."""

    def __init__(self, compiled: _Compiled, size: int) -> None:
        self._compiled = compiled
        self.searched_chars = MAX_LINE_WORK // max(size, 1)
        """How much of a line is searched: its first this many characters."""

    def search(self, line: str) -> bool:
        return self._compiled.search(line[: self.searched_chars]) is not None


def compile_pattern(pattern: str) -> LinePattern:
    """``pattern`` compiled by RE2 within the bounds above; ToolError saying why not."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ToolError(
            f"regular expression {shown(pattern)} is {len(pattern):,} characters long; "
            f"the limit is {MAX_PATTERN_CHARS:,}"
        )
    options = re2.Options()
    options.max_mem = MAX_PATTERN_MEMORY
    options.log_errors = False  # RE2 would print every refusal on stderr
    options.never_capture = True  # a match is all search needs: the fastest engine then runs
    try:
        compiled = re2.compile(pattern, options)
    except re2.error as exc:
        reason = exc.args[0].decode() if isinstance(exc.args[0], bytes) else str(exc.args[0])
        raise ToolError(
            f"regular expression {shown(pattern)} cannot be used: {reason}; {RE2_SYNTAX}"
        ) from None
    finally:
        re2.purge()  # RE2's module cache would keep up to 128 patterns of 8 MiB each alive
    size = max(compiled.programsize, compiled.reverseprogramsize)
    if size > MAX_PROGRAM_SIZE:
        raise ToolError(
            f"regular expression {shown(pattern)} is too large: it compiles to {size:,} "
            f"instructions, more than {MAX_PROGRAM_SIZE:,}; use smaller repeat counts, or + and *"
        )
    return LinePattern(compiled, size)
