"""Pathological patterns through the ``search`` tool: time each takes and memory the process gains.

Each pattern (nested quantifiers, huge counted repeats in every spelling, ``(?x)`` spacing,
backreferences, lookaround, ...) is searched for in a workspace holding long lines of ``a``
(the text backtracking engines choke on), of a mix of ``a`` and ``b`` (where RE2's DFA gives up
on the slowest patterns) and ordinary source. Printed per pattern: seconds,
the outcome (matches, no matches, or the refusal), and the growth of the process's peak
resident memory (``VmHWM``) over what it was after one ordinary search.

    python bench/search_patterns.py [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.models.base import ToolCall  # noqa: E402
from harness.tools import Toolbox, default_tools  # noqa: E402
from harness.tools.toolkit import ToolContext  # noqa: E402

PATTERNS = (
    # huge counted repeats, in every spelling
    "a{1000000000}",
    "\\{1000000000}",
    "(?x)a{1000 000 000}",
    "(?x)a{ 1000000000 }",
    "a{1000000000,}",
    "a{,1000000000}",
    "a{0,1000000000}",
    "a{99999999999999999999999}",
    "(a{1000}){1000}",
    "((x{99}){99}){99}",
    "(?:a{999}|b{999}){999}",
    "x{1000}{1000}",
    ".{1000}.{1000}.{1000}.{1000}",
    "\\pL{1000}",
    "(?x) a {1000} ",
    # nested quantifiers and alternation (exponential backtracking elsewhere)
    "(a|a)+$",
    "(a+)+$",
    "(a*)*b",
    "(a|aa)*c",
    "(.*a){20}",
    "^(([a-z])+.)+[A-Z]([a-z])+$",
    "(\\w+\\s?)*$",
    "(x+x+)+y",
    "(a|a?)+$" * 20,
    # linear, but the slowest kind for RE2: its DFA runs out of memory on mixed text
    "(?s).{100}a.{100}b.{100}x",
    "(?s).{190}a.{190}b.{190}x",
    "[^x]{999}[^y]{999}z",
    # what RE2 does not run
    "(a)\\1",
    "(?P<q>['\"]).*(?P=q)",
    "a(?=b)",
    "(?<!a)b",
    "(?>a+)b",
    "a++b",
    # a pattern of extreme length
    "a" * 20_000,
)
LONG_LINE = "a" * 100_000 + "!"
MIXED_LINE = "".join("ab"[(n * n + n // 7) % 3 % 2] for n in range(100_000)) + "!"


def peak_kb() -> int:
    """The process's peak resident memory so far (VmHWM), in kB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status")


def measure() -> list[dict[str, object]]:
    """One record per pattern: seconds, outcome, peak memory growth in kB since the start."""
    box = Toolbox(default_tools())
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        (workspace / "long.txt").write_text((LONG_LINE + "\n") * 20)
        (workspace / "mixed.txt").write_text((MIXED_LINE + "\n") * 20)
        (workspace / "app.py").write_text("def add(a, b):\n    return a + b\n" * 200)
        ctx = ToolContext(workspace=workspace)  # the default search deadline
        box.execute(ToolCall("search", {"pattern": "def add"}), ctx)  # RE2 loaded and warm
        start_kb = peak_kb()
        records: list[dict[str, object]] = []
        for pattern in PATTERNS:
            began = time.monotonic()
            result = box.execute(ToolCall("search", {"pattern": pattern}), ctx)
            seconds = time.monotonic() - began
            first = result.output.splitlines()[0] if result.output else ""
            outcome = "refused" if result.is_error else "searched"
            records.append({"pattern": pattern, "seconds": seconds, "outcome": outcome,
                            "said": first[:160], "grown_kb": peak_kb() - start_kb})  # fmt: skip
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON object per pattern")
    records = measure()
    if parser.parse_args().json:
        for record in records:
            print(json.dumps(record))
        return
    for record in records:
        shown = repr(record["pattern"])
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        print(f"{record['seconds']:7.3f}s  {record['grown_kb']:>7} kB  {record['outcome']:8}  "
              f"{shown:40}  {record['said']}")  # fmt: skip
    slowest = max(float(str(r["seconds"])) for r in records)
    print(f"{len(records)} patterns; slowest {slowest:.3f}s; "
          f"peak memory grew {records[-1]['grown_kb']} kB")  # fmt: skip


if __name__ == "__main__":
    main()
