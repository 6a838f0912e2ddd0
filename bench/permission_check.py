"""What judging a tool call against permission rules costs: a parsed command line, per call.

Every run_shell call under command rules is parsed with bashlex and each program it runs is
matched; this times that for short and long lines, nested shells included, against a set of
twelve rules, and the same calls with no command rule (nothing parsed), for comparison with a
model call (hundreds of milliseconds) and a sandboxed command (tens of milliseconds). Last, what
the session's guard adds to every tool call (before and after it) with nothing configured, with
one path rule, and with one after hook that does not apply to the call.

Run from the repository root: ``python -m bench.permission_check [--repeat 2000]``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

from harness.agent.actions import ActionGuard, ActionHook
from harness.core.sink import NULL_SINK
from harness.models.base import ToolCall
from harness.tools import ToolContext, ToolResult
from harness.tools.permissions import Permissions

LINES = {
    "short": "pytest -q",
    "chain": "cd src && ruff check . && pytest -q tests/test_a.py | tail -5; echo done",
    "nested": "bash -lc 'for f in *.py; do python -m py_compile \"$f\" || exit 1; done' && git status",
    "long": " && ".join(f"echo step{n} > out{n}.txt" for n in range(40)),
}
RULES = Permissions(
    allow=["run_shell(pytest*)", "run_shell(ruff*)", "run_shell(git status*)", "run_shell(echo*)"],
    ask=["run_shell(pip install*)", "run_shell(npm install*)", "mcp__files__delete"],
    deny=["run_shell(git push*)", "run_shell(rm -rf*)", "run_shell(curl*)", "write_file(tests/*)",
          "mcp__github__*"],
)  # fmt: skip
PATH_ONLY = Permissions(deny=["write_file(tests/*)"])


def per_call(rules: Permissions, line: str, repeat: int) -> float:
    started = time.perf_counter()
    for _ in range(repeat):
        rules.decide("run_shell", {"command": line})
    return (time.perf_counter() - started) / repeat


def guarded(guard: ActionGuard, repeat: int) -> float:
    """Seconds per call that ``guard`` adds to a ``write_file`` call of 2,000 characters."""
    arguments = json.dumps({"path": "src/app.py", "content": "x = 1\n" * 333})
    call, result = ToolCall("write_file", arguments), ToolResult("created src/app.py")
    started = time.perf_counter()
    for _ in range(repeat):
        if guard.before(call) is None:
            guard.after(call, result)
    return (time.perf_counter() - started) / repeat


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=2000)
    repeat = parser.parse_args().repeat
    print(f"{'line':<8} {'chars':>6} {'verdict':>8} {'parsed µs':>10} {'unparsed µs':>12}")
    for name, line in LINES.items():
        verdict = RULES.decide("run_shell", {"command": line}).verdict
        parsed = per_call(RULES, line, repeat) * 1e6
        unparsed = per_call(PATH_ONLY, line, repeat) * 1e6
        print(f"{name:<8} {len(line):>6} {verdict:>8} {parsed:>10.1f} {unparsed:>12.1f}")
    with tempfile.TemporaryDirectory() as folder:
        ctx = ToolContext(workspace=folder)
        lint = ActionHook("lint", "after", "ruff check .", tools=("edit_file",))
        guards = {
            "nothing configured": ActionGuard(ctx, NULL_SINK),
            "one path rule": ActionGuard(ctx, NULL_SINK, PATH_ONLY),
            "one after hook, not this tool": ActionGuard(ctx, NULL_SINK, hooks=(lint,)),
        }
        for label, guard in guards.items():
            print(f"guard per tool call, {label}: {guarded(guard, repeat * 10) * 1e6:.2f} µs")


if __name__ == "__main__":
    main()
