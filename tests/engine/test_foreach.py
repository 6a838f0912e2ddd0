"""ForEach: order kept, concurrency bounded, fail-fast or continue, exit, bounds, async."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from harness.core.errors import ConfigError, Stopped
from harness.core.stop import StopReason
from harness.engine.foreach import ForEach
from harness.engine.loop import LoopContext, Watchdog


class Gauge:
    """Counts bodies running at once, from threads or tasks."""

    def __init__(self) -> None:
        self.active = 0
        self.peak = 0
        self.finished: list[int] = []
        self._lock = threading.Lock()

    def enter(self) -> None:
        with self._lock:
            self.active += 1
            self.peak = max(self.peak, self.active)

    def leave(self, index: int) -> None:
        with self._lock:
            self.active -= 1
            self.finished.append(index)


def test_the_body_sees_item_index_and_total() -> None:
    seen = ForEach(lambda ctx: (ctx.item, ctx.input, ctx.index, ctx.total), ["a", "b"]).run()
    assert seen == [("a", "a", 0, 2), ("b", "b", 1, 2)]


def test_templates_render_the_item() -> None:
    outputs = ForEach(
        lambda ctx: ctx.render("{{loop.index}}/{{loop.total}}: {{loop.item}}"), ["x", {"k": 1}]
    ).run()
    assert outputs == ["0/2: x", '1/2: {"k": 1}']


@pytest.mark.parametrize("concurrency", [2, 4, 8])
def test_order_is_kept_when_items_finish_out_of_order(concurrency: int) -> None:
    gauge = Gauge()
    delays = [0.08, 0.01, 0.05, 0.0, 0.03, 0.06, 0.02, 0.04]

    def body(ctx: LoopContext) -> str:
        gauge.enter()
        time.sleep(ctx.item)
        gauge.leave(ctx.index)
        return f"out-{ctx.index}"

    outputs = ForEach(body, delays, concurrency=concurrency).run()
    assert outputs == [f"out-{i}" for i in range(len(delays))]
    assert gauge.finished != sorted(gauge.finished)  # they really did finish out of order


@pytest.mark.parametrize("concurrency", [1, 2, 3, 5, 8])
def test_threads_never_run_more_than_concurrency_bodies(concurrency: int) -> None:
    gauge = Gauge()
    first_wave = threading.Barrier(concurrency)  # the first bodies wait until all are in

    def body(ctx: LoopContext) -> int:
        gauge.enter()
        if ctx.index < concurrency:
            first_wave.wait(timeout=30)
        time.sleep(0.01)
        gauge.leave(ctx.index)
        return ctx.index

    assert ForEach(body, range(16), concurrency=concurrency).run() == list(range(16))
    assert gauge.peak == concurrency


@pytest.mark.parametrize("concurrency", [1, 3, 8])
def test_async_tasks_never_run_more_than_concurrency_bodies(concurrency: int) -> None:
    gauge = Gauge()

    async def body(ctx: LoopContext) -> int:
        gauge.enter()
        await asyncio.sleep(0.01 * (ctx.index % 3))
        gauge.leave(ctx.index)
        return ctx.index

    assert ForEach(body, range(16), concurrency=concurrency).run() == list(range(16))
    assert gauge.peak == concurrency


def test_parallel_async_bodies_are_not_serialised() -> None:
    arrived: list[int] = []
    everyone = asyncio.Event()

    async def body(ctx: LoopContext) -> int:
        arrived.append(ctx.index)
        if len(arrived) == 8:
            everyone.set()
        await asyncio.wait_for(everyone.wait(), timeout=30)  # serialised: the first never ends
        return ctx.index

    assert ForEach(body, range(8), concurrency=8).run() == list(range(8))
    assert sorted(arrived) == list(range(8))


def test_arun_runs_async_and_sync_bodies() -> None:
    async def double(ctx: LoopContext) -> int:
        await asyncio.sleep(0)
        return ctx.item * 2

    async def main() -> tuple[list[Any], list[Any]]:
        return (
            await ForEach(double, [1, 2, 3], concurrency=2).arun(),
            await ForEach(lambda ctx: ctx.item * 3, [1, 2, 3], concurrency=2).arun(),
        )

    assert asyncio.run(main()) == ([2, 4, 6], [3, 6, 9])


def fail_on_two(ctx: LoopContext) -> int:
    if ctx.item == 2:
        raise ValueError(f"bad item {ctx.item}")
    return ctx.item * 10


def test_continue_on_error_records_the_failure_and_goes_on() -> None:
    outputs = ForEach(fail_on_two, [1, 2, 3], continue_on_error=True).run()
    assert outputs == [10, {"error": "ValueError: bad item 2"}, 30]
    parallel = ForEach(fail_on_two, [2, 1, 2, 3], concurrency=3, continue_on_error=True).run()
    assert parallel == [
        {"error": "ValueError: bad item 2"},
        10,
        {"error": "ValueError: bad item 2"},
        30,
    ]


def test_without_continue_on_error_the_first_failure_stops_the_rest() -> None:
    started: list[int] = []

    def body(ctx: LoopContext) -> int:
        started.append(ctx.index)
        return fail_on_two(ctx)

    with pytest.raises(ValueError, match="bad item 2") as info:
        ForEach(body, [1, 2, 3, 4]).run()
    assert started == [0, 1]
    assert info.value.__notes__ == ["raised in ForEach item at index 1 of 4"]


def test_parallel_fail_fast_starts_no_further_item() -> None:
    started: list[int] = []

    def body(ctx: LoopContext) -> int:
        started.append(ctx.index)
        if ctx.index == 1:
            raise RuntimeError("item 1 failed")
        time.sleep(0.05)
        return ctx.index

    with pytest.raises(RuntimeError, match="item 1 failed"):
        ForEach(body, range(20), concurrency=2).run()
    assert len(started) <= 3


def test_async_fail_fast_cancels_running_siblings() -> None:
    cancelled: list[int] = []

    async def body(ctx: LoopContext) -> int:
        if ctx.index == 0:
            await asyncio.sleep(0.02)
            raise RuntimeError("first item failed")
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(ctx.index)
            raise
        return ctx.index

    started = time.monotonic()
    with pytest.raises(RuntimeError, match="first item failed") as info:
        ForEach(body, range(10), concurrency=4).run()
    assert time.monotonic() - started < 30  # the others' 60 s sleeps were cut short
    assert sorted(cancelled) == [1, 2, 3]
    assert info.value.__notes__ == ["raised in ForEach item at index 0 of 10"]


def test_exit_starts_no_further_item() -> None:
    def body(ctx: LoopContext) -> int:
        if ctx.item == "needle":
            ctx.exit("found it")
        return ctx.index

    assert ForEach(body, ["hay", "needle", "hay", "hay"]).run() == [0, 1]


def test_a_stop_propagates_even_when_continuing_on_error() -> None:
    def body(ctx: LoopContext) -> None:
        if ctx.index == 1:
            raise Stopped(StopReason.CANCELLED, "cancelled by the user")

    with pytest.raises(Stopped, match="cancelled by the user"):
        ForEach(body, range(3), continue_on_error=True).run()


def test_the_watchdog_bounds_body_executions() -> None:
    watchdog = Watchdog(max_bodies=3)
    with pytest.raises(Stopped) as info:
        ForEach(lambda ctx: ctx.index, range(5), concurrency=2, watchdog=watchdog).run()
    assert info.value.reason is StopReason.TIMEOUT
    assert watchdog.bodies == 3


def test_empty_items_give_an_empty_list() -> None:
    assert ForEach(lambda ctx: 1, [], concurrency=4).run() == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"concurrency": 0}, "concurrency: must be an integer from 1 to 8"),
        ({"concurrency": 9}, "concurrency: must be an integer from 1 to 8"),
        ({"concurrency": True}, "concurrency"),
        ({"items": "files[x]"}, "reference 'files\\[x\\]': at position 5"),
        ({"items": {"a": 1}}, "items: must be a list"),
        ({"items": 3}, "items: must be a list"),
        ({"body": None}, "body: must be callable"),
    ],
)
def test_bad_settings_are_refused_at_construction(kwargs: dict[str, Any], message: str) -> None:
    settings: dict[str, Any] = {"body": lambda ctx: 1, "items": [1]} | kwargs
    with pytest.raises(ConfigError, match=message):
        ForEach(settings.pop("body"), settings.pop("items"), **settings)


def test_generators_are_accepted_as_items() -> None:
    assert ForEach(lambda ctx: ctx.item + 1, (n for n in range(3))).run() == [1, 2, 3]


def test_an_interrupt_in_a_worker_starts_no_further_item() -> None:
    started: list[int] = []

    def body(ctx: LoopContext) -> None:
        started.append(ctx.index)
        if ctx.index == 0:
            raise KeyboardInterrupt
        time.sleep(0.01)

    with pytest.raises(KeyboardInterrupt):
        ForEach(body, range(50), concurrency=2).run()
    assert len(started) < 10


HOW = "write def body(ctx): ... with the item as ctx.item (also ctx.index, ctx.total, ctx.vars)"


def two_arguments(doc: str, style: str) -> str:
    return doc + style


def no_argument() -> int:
    return 1


@pytest.mark.parametrize(
    ("body", "named"),
    [(two_arguments, "two_arguments(doc, style)"), (no_argument, "no_argument()")],
)
def test_a_body_that_cannot_take_the_context_is_refused_naming_the_signature(
    body: Any, named: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        ForEach(body, ["a"], continue_on_error=True)
    assert str(caught.value) == (
        f"body: {named} cannot take the one argument a body is given, the loop context; {HOW}"
    )


def test_a_body_that_takes_its_context_for_the_item_fails_even_when_continuing() -> None:
    def summarise(doc: str) -> str:
        return doc.upper()  # doc is the context, not the item

    for continuing in (False, True):
        with pytest.raises(ConfigError) as caught:
            ForEach(summarise, ["a", "b"], continue_on_error=continuing).run()
        assert str(caught.value) == (
            "body: AttributeError: 'LoopContext' object has no attribute 'upper': the body was "
            f"given the loop context, not the item; {HOW}"
        )
    with pytest.raises(ConfigError, match=r"^body: TypeError: 'LoopContext' object is not sub"):
        ForEach(lambda doc: doc[0], ["a"], concurrency=2, continue_on_error=True).run()


def test_an_items_own_attribute_and_type_errors_are_still_its_own() -> None:
    outputs = ForEach(lambda ctx: ctx.item.upper(), ["a", 3], continue_on_error=True).run()
    assert outputs == ["A", {"error": "AttributeError: 'int' object has no attribute 'upper'"}]
    assert ForEach(lambda ctx, extra=1: ctx.item + extra, [1]).run() == [2]  # a default is fine
