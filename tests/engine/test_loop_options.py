"""Loop options from the seeds: feedback off and no nesting (seed 000), the default body-count
cap (seed 001), per-round step counts and timings in the history (seed 004)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from harness import ConfigError, ForEach, Loop, StopReason
from harness.core.errors import Stopped
from harness.engine.bounds import DEFAULT_MAX_BODIES
from harness.engine.loop import LoopContext, Watchdog

# --- seed 000: feedback=False, allow_nested=False ---------------------------------------------


def test_feedback_off_gives_every_round_the_loops_input() -> None:
    def body(ctx: LoopContext) -> str:
        ctx.vars.seen = [*ctx.vars.seen, ctx.input]
        return f"output {ctx.index}"

    fed = Loop(body, variables={"seen": []}, until="", max_iterations=3).run("start")
    assert fed.variables["seen"] == ["start", "output 0", "output 1"]
    fresh = Loop(body, variables={"seen": []}, until="", max_iterations=3, feedback=False)
    result = fresh.run("start")
    assert result.variables["seen"] == ["start", "start", "start"]
    assert [r.input for r in result.history] == ["start"] * 3
    assert result.output == "output 2"


def test_feedback_off_conditions_still_read_this_rounds_output() -> None:
    def body(ctx: LoopContext) -> dict[str, Any]:
        return {"score": ctx.index * 4} if ctx.index != 1 else {}

    result = Loop(body, until="score >= 8", feedback=False, max_iterations=5).run()
    assert result.loop_round == 3


def test_allow_nested_false_refuses_loops_inside_the_body() -> None:
    def with_inner_loop(ctx: LoopContext) -> Any:
        return Loop(lambda c: 1, max_iterations=1).run()

    sealed = Loop(with_inner_loop, max_iterations=2, allow_nested=False)
    with pytest.raises(
        ConfigError, match="enclosing Loop was built with allow_nested=False"
    ) as info:
        sealed.run()
    assert info.value.__notes__ == ["raised in loop round 1"]

    with_foreach = Loop(lambda ctx: ForEach(lambda c: 1, [1]).run(), allow_nested=False)
    with pytest.raises(ConfigError, match="ForEach: the enclosing Loop"):
        with_foreach.run()

    nested_ok = Loop(with_inner_loop, until="", max_iterations=2).run()
    assert nested_ok.loop_round == 2


def test_a_sealed_loop_may_itself_be_nested_and_loops_after_it_run() -> None:
    inner = Loop(lambda ctx: ctx.index, until="", max_iterations=2, allow_nested=False)
    outer = Loop(lambda ctx: inner.run().output, until="", max_iterations=2).run()
    assert outer.output == 1
    assert Loop(lambda ctx: 1, until="", max_iterations=1).run().loop_round == 1


# --- seed 001: the default cap on body executions ---------------------------------------------


def inner_loops(rounds: int) -> Any:
    return lambda ctx: Loop(lambda c: None, until="", max_iterations=rounds).run()


def test_a_run_without_a_watchdog_stops_at_200_body_executions() -> None:
    assert DEFAULT_MAX_BODIES == 200
    result = Loop(inner_loops(3), until="", max_iterations=100).run()
    # 4 bodies a round (the round and 3 inner): 50 rounds make 200; round 51 is refused
    assert (result.stop_reason, result.loop_round) == (StopReason.TIMEOUT, 50)
    assert result.message == (
        "Loop finished after 50 round(s): TIMEOUT (watchdog: the run reached its limit of "
        "200 body executions (the default; give the outermost loop watchdog=Watchdog(max_bodies=N)"
        " to change it))"
    )
    assert not result.done


def test_exactly_200_body_executions_are_allowed_and_each_run_starts_afresh() -> None:
    loop = Loop(inner_loops(1), until="", max_iterations=100)
    for _ in range(2):
        result = loop.run()
        assert (result.stop_reason, result.loop_round) == (StopReason.MAX_ITERATIONS, 100)


def test_an_explicit_watchdog_replaces_the_default_cap() -> None:
    watchdog = Watchdog(max_bodies=1000)
    result = Loop(inner_loops(3), until="", max_iterations=100, watchdog=watchdog).run()
    assert (result.stop_reason, result.loop_round, watchdog.bodies) == (
        StopReason.MAX_ITERATIONS,
        100,
        400,
    )
    unlimited = Loop(inner_loops(3), until="", max_iterations=100, watchdog=Watchdog()).run()
    assert unlimited.loop_round == 100


def test_a_foreach_run_alone_is_capped_too() -> None:
    assert len(ForEach(lambda ctx: ctx.item, range(200)).run()) == 200
    with pytest.raises(Stopped, match="limit of 200 body executions") as info:
        ForEach(lambda ctx: ctx.item, range(201)).run()
    assert info.value.reason is StopReason.TIMEOUT
    lifted = ForEach(lambda ctx: ctx.item, range(500), watchdog=Watchdog(max_bodies=500)).run()
    assert lifted.succeeded == 500


# --- seed 004: per-round step counts and timings ----------------------------------------------


def test_history_records_steps_and_timing_of_every_round() -> None:
    def body(ctx: LoopContext) -> None:
        if ctx.index == 0:
            Loop(lambda c: None, until="", max_iterations=3).run()
        elif ctx.index == 1:
            ForEach(lambda c: c.item, range(5), parallel=True).run()
        else:
            time.sleep(0.03)

    before = time.time()
    result = Loop(body, until="", max_iterations=3).run()
    after = time.time()
    assert [r.steps for r in result.history] == [4, 6, 1]
    starts = [r.started for r in result.history]
    assert before <= starts[0] <= starts[1] <= starts[2] <= after
    assert result.history[2].seconds >= 0.03
    assert starts[2] - starts[1] >= result.history[1].seconds


def test_a_failed_round_records_its_steps_too() -> None:
    def body(ctx: LoopContext) -> None:
        Loop(lambda c: None, until="", max_iterations=2).run()
        raise ValueError("late")

    result = Loop(body, on_error="stop", max_iterations=3).run()
    assert [(r.steps, r.error) for r in result.history] == [(3, "ValueError: late")]


def test_steps_of_a_loop_inside_a_parallel_foreach_are_its_own() -> None:
    def item(ctx: LoopContext) -> list[int]:
        result = Loop(inner_loops(ctx.item), until="", max_iterations=2).run()
        return [r.steps for r in result.history]

    assert ForEach(item, [1, 2, 3, 4], concurrency=4).run() == [[2, 2], [3, 3], [4, 4], [5, 5]]
