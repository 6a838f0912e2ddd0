"""Seed 001's foreach mode: parallel with a default of 4, items by reference into the previous
step's output, and results that say how many items succeeded."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from harness import ConfigError, ForEach, Loop
from harness.engine.foreach import PARALLEL_CONCURRENCY
from harness.engine.loop import LoopContext
from harness.engine.result import ForEachResult


class Gauge:
    """Counts bodies running at once; each waits at a barrier of ``parties`` first."""

    def __init__(self, parties: int) -> None:
        self.barrier = threading.Barrier(parties, timeout=10)
        self.lock = threading.Lock()
        self.active = self.most = 0

    def __call__(self, ctx: LoopContext) -> int:
        with self.lock:
            self.active += 1
            self.most = max(self.most, self.active)
        self.barrier.wait()
        with self.lock:
            self.active -= 1
        return int(ctx.item) * 10


def test_parallel_without_a_concurrency_runs_four_at_once() -> None:
    assert PARALLEL_CONCURRENCY == 4
    gauge = Gauge(4)
    each = ForEach(gauge, range(8), parallel=True)
    assert each.concurrency == 4
    result = each.run()
    assert result == [0, 10, 20, 30, 40, 50, 60, 70]
    assert gauge.most == 4
    assert (result.succeeded, result.total, result.failed) == (8, 8, ())
    assert result.message == "foreach 8/8 (parallel)"


def test_an_explicit_concurrency_wins_and_sequential_is_the_default() -> None:
    gauge = Gauge(2)
    assert ForEach(gauge, range(4), parallel=True, concurrency=2).run() == [0, 10, 20, 30]
    assert gauge.most == 2
    sequential = ForEach(lambda ctx: ctx.item, ["a"])
    assert (sequential.concurrency, sequential.parallel) == (1, False)
    assert sequential.run().message == "foreach 1/1"
    assert ForEach(lambda ctx: 1, [1], concurrency=3).parallel is True
    with pytest.raises(ConfigError, match="concurrency: must be an integer from 1 to 8, got 9"):
        ForEach(lambda ctx: 1, [1], parallel=True, concurrency=9)


def test_results_count_failed_items_when_continuing() -> None:
    def parse(ctx: LoopContext) -> int:
        return int(ctx.item)

    result = ForEach(parse, ["1", "x", "3", "y"], parallel=True, continue_on_error=True).run()
    assert isinstance(result, ForEachResult)
    assert (result[0], result[2]) == (1, 3)
    assert result[1] == {"error": "ValueError: invalid literal for int() with base 10: 'x'"}
    assert (result.succeeded, result.total, result.failed) == (2, 4, (1, 3))
    assert result.message == "foreach 2/4 (parallel)"


def test_an_empty_foreach_is_zero_of_zero() -> None:
    result = ForEach(lambda ctx: 1, []).run()
    assert (list(result), result.message) == ([], "foreach 0/0")


def test_async_bodies_report_counts_too() -> None:
    async def body(ctx: LoopContext) -> int:
        await asyncio.sleep(0)
        if ctx.item == 2:
            raise KeyError("two")
        return int(ctx.item)

    result = asyncio.run(ForEach(body, [1, 2, 3], parallel=True, continue_on_error=True).arun())
    assert result == [1, {"error": "KeyError: 'two'"}, 3]
    assert result.message == "foreach 2/3 (parallel)"


# --- items by reference -----------------------------------------------------------------------


def test_items_are_taken_from_the_previous_steps_output_by_reference() -> None:
    previous = {"files": ["a.py", "b.py"], "batches": [[1], [2, 3]]}
    name = ForEach(lambda ctx: ctx.item.upper(), "files")
    assert name.run(previous) == ["A.PY", "B.PY"]
    assert ForEach(lambda ctx: ctx.item * 2, "input.batches[-1]").run(previous) == [4, 6]
    assert ForEach(lambda ctx: ctx.item + 1, "$batches.1").run(previous) == [3, 4]
    assert ForEach(lambda ctx: -ctx.item).run([1, 2]) == [-1, -2]
    assert name.run({"files": ["c"]}) == ["C"]  # the reference is read on every run


def test_a_loop_round_feeds_a_foreach_through_its_output() -> None:
    def body(ctx: LoopContext) -> dict[str, Any]:
        if ctx.index == 0:
            return {"files": ["x", "yy", "zzz"]}
        sizes = ForEach(lambda c: len(c.item), "files", parallel=True).run(ctx.input)
        return {"sizes": sizes, "done": True}

    result = Loop(body, max_iterations=5).run()
    assert (result.loop_round, result.output["sizes"]) == (2, [1, 2, 3])


@pytest.mark.parametrize(
    ("items", "given", "message"),
    [
        ("files", {"other": []}, "items: 'files' does not resolve in run\\(\\)'s input"),
        ("files", {"files": "a.py"}, "items: 'files' must name an array .* got str"),
        ("files", {"files": {"a": 1}}, "must name an array .* got dict"),
        ("files", None, "items: 'files' does not resolve"),
        (None, None, "items: none given, and run\\(\\) got no input to iterate"),
        (None, {"a": 1}, "items: 'input' must name an array in run\\(\\)'s input, got dict"),
    ],
)
def test_a_reference_that_names_no_array_is_a_clear_error(
    items: str | None, given: Any, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        ForEach(lambda ctx: ctx.item, items).run(given)


def test_a_malformed_reference_is_refused_at_construction() -> None:
    with pytest.raises(ConfigError, match=r"items: reference 'files\.': at position 6 \(the end\)"):
        ForEach(lambda ctx: 1, "files.")
