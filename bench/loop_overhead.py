"""The loop engine's own cost, and how well ForEach runs sleeping bodies in parallel.

Overhead: an almost empty body stamps ``perf_counter_ns`` at every call; the gap between two
consecutive calls of one run is the engine's work for one round (conditions, variables
snapshot, history record, watchdog admission) plus one call. The median over 10,000 rounds is
printed for a loop with no condition, with the default ``done == true`` condition, with a
condition on the history, and with two variables and an ``until`` condition. Targets: an empty
round with no condition <= 2 us, a whole ``run()`` of one empty round <= 6.8 us (both on a quiet
machine; other work on it lengthens every figure alike).

Parallel efficiency: ForEach over items whose body sleeps; efficiency is the ideal time
(items x sleep / concurrency) over the measured time, for threads (sync body) and tasks
(async body).

    python bench/loop_overhead.py [--rounds 10000] [--items 32] [--sleep 0.02]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.engine.bounds import MAX_ITERATIONS  # noqa: E402
from harness.engine.foreach import ForEach  # noqa: E402
from harness.engine.loop import Loop, LoopContext  # noqa: E402


def round_gaps(
    make_loop: Callable[[Callable[[LoopContext], Any]], Loop], rounds: int
) -> list[float]:
    """Nanoseconds between consecutive body calls, over ``rounds`` rounds."""
    gaps: list[float] = []
    while len(gaps) < rounds:
        gaps.extend(one_run_gaps(make_loop))
    return gaps[:rounds]


def one_run_gaps(make_loop: Callable[[Callable[[LoopContext], Any]], Loop]) -> list[float]:
    stamps: list[int] = []
    make_loop(lambda ctx: stamps.append(time.perf_counter_ns())).run()
    return [b - a for a, b in zip(stamps, stamps[1:], strict=False)]


ROUND_TARGET_US = 2.0
RUN_TARGET_US = 6.8


def met(value: float, target: float) -> str:
    return f"(target <= {target:g} us {'met' if value <= target else 'NOT met'})"


def run_cost(runs: int) -> None:
    """A whole ``run()`` of one empty round: what a nested loop costs its caller."""
    loop = Loop(lambda ctx: None, max_iterations=1)
    times = []
    for _ in range(runs):
        started = time.perf_counter_ns()
        loop.run()
        times.append(time.perf_counter_ns() - started)
    median = statistics.median(times) / 1000
    print(
        f"  {'whole run() of 1 empty round':<34} median {median:6.2f} us {met(median, RUN_TARGET_US)}"
    )


EMPTY = "empty body, no condition"


def overhead(rounds: int) -> None:
    print(f"Loop overhead per round (median of {rounds:,} rounds, {MAX_ITERATIONS} per run)")
    cases: dict[str, Callable[[Callable[[LoopContext], Any]], Loop]] = {
        EMPTY: lambda body: Loop(body, until="", max_iterations=MAX_ITERATIONS),
        "empty body, default done == true": lambda body: Loop(body, max_iterations=MAX_ITERATIONS),
        "empty body, history[-1] condition": lambda body: Loop(
            body, until="history[-1].output.done", max_iterations=MAX_ITERATIONS
        ),
        "2 variables + until condition": lambda body: Loop(
            body,
            variables={"score": 0, "draft": "text"},
            until="score >= 8 and draft is empty",
            max_iterations=MAX_ITERATIONS,
        ),
    }
    for label, make in cases.items():
        round_gaps(make, 1_000)  # warm up
        gaps = round_gaps(make, rounds)
        quantiles = statistics.quantiles(gaps, n=100)
        median = statistics.median(gaps) / 1000
        target = " " + met(median, ROUND_TARGET_US) if label == EMPTY else ""
        print(
            f"  {label:<34} median {median:6.2f} us"
            f"   p90 {quantiles[89] / 1000:6.2f} us   p99 {quantiles[98] / 1000:6.2f} us{target}"
        )
    run_cost(rounds)


def efficiency(items: int, sleep: float) -> None:
    print(f"ForEach parallel efficiency ({items} items, each sleeping {sleep * 1000:g} ms)")

    async def nap(ctx: LoopContext) -> int:
        await asyncio.sleep(sleep)
        return ctx.index

    def doze(ctx: LoopContext) -> int:
        time.sleep(sleep)
        return ctx.index

    for concurrency in (1, 2, 4, 8):
        cells = []
        for label, body in (("threads", doze), ("async", nap)):
            started = time.perf_counter()
            outputs = ForEach(body, range(items), concurrency=concurrency).run()
            elapsed = time.perf_counter() - started
            assert outputs == list(range(items))
            ideal = items * sleep / concurrency
            cells.append(f"{label} {elapsed * 1000:7.1f} ms ({ideal / elapsed:6.1%})")
        print(f"  concurrency {concurrency}:  " + "   ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10_000)
    parser.add_argument("--items", type=int, default=32)
    parser.add_argument("--sleep", type=float, default=0.02)
    args = parser.parse_args()
    overhead(args.rounds)
    efficiency(args.items, args.sleep)


if __name__ == "__main__":
    main()
