"""Seed 002: a validator's pass ends the round at once; a loop that gives up says so its way."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

import pytest

from harness import ConfigError, ForEach, Loop, LoopResult, StopReason
from harness.core.errors import Stopped
from harness.engine.loop import LoopContext


def test_a_validator_pass_ends_the_round_at_once() -> None:
    ran_after: list[int] = []

    def body(ctx: LoopContext) -> str:
        draft = f"draft {ctx.index}"
        ctx.validate(ctx.index == 2, f"{draft} checked", output=draft)
        ran_after.append(ctx.index)
        return "after the check"

    result = Loop(body, until="", max_iterations=5).run()
    assert (result.loop_round, result.stop_reason, result.done) == (3, StopReason.PASSED, True)
    assert ran_after == [0, 1]
    assert result.output == "draft 2"
    assert [r.output for r in result.history] == ["after the check", "after the check", "draft 2"]
    assert result.message == "Loop finished after 3 round(s): PASSED (draft 2 checked)"
    assert result.node_message == "looped 3 (done)"


def test_a_pass_without_output_leaves_none_and_a_fail_returns_false() -> None:
    seen: list[bool] = []

    def body(ctx: LoopContext) -> str:
        seen.append(ctx.validate(ctx.index == 1))
        return "failed round"

    result = Loop(body, max_iterations=3).run()
    assert seen == [False]
    assert (result.output, [r.passed for r in result.history]) == (None, [False, True])


def test_a_body_catching_exceptions_cannot_swallow_the_pass() -> None:
    def body(ctx: LoopContext) -> str:
        try:
            ctx.validate(True, output="kept")
        except Exception:
            return "swallowed"
        return "ran on"

    result = Loop(body, max_iterations=3).run()
    assert (result.output, result.stop_reason, result.loop_round) == ("kept", StopReason.PASSED, 1)


def test_a_nested_body_validating_the_outer_round_ends_the_inner_loop_and_the_outer_round() -> None:
    inner_rounds: list[int] = []

    def outer(ctx: LoopContext) -> str:
        def inner(inner_ctx: LoopContext) -> None:
            inner_rounds.append(inner_ctx.index)
            if inner_ctx.index == 1:
                ctx.validate(True, "inner found it", output="from inside")

        Loop(inner, until="", max_iterations=5).run()
        return "outer went on"

    result = Loop(outer, max_iterations=4).run()
    assert (result.stop_reason, result.loop_round, result.output) == (
        StopReason.PASSED,
        1,
        "from inside",
    )
    assert inner_rounds == [0, 1]


@pytest.mark.parametrize("concurrency", [1, 3])
def test_an_outer_validator_called_inside_a_foreach_item_ends_the_outer_round(
    concurrency: int,
) -> None:
    def outer(ctx: LoopContext) -> str:
        def item(item_ctx: LoopContext) -> int:
            if item_ctx.item == 4:
                ctx.validate(True, output=f"item {item_ctx.item}")
            return item_ctx.item

        ForEach(item, range(6), concurrency=concurrency).run()
        return "outer went on"

    result = Loop(outer, max_iterations=3).run()
    assert (result.stop_reason, result.output) == (StopReason.PASSED, "item 4")


def test_async_bodies_end_their_round_at_once_too() -> None:
    after: list[int] = []

    async def body(ctx: LoopContext) -> str:
        ctx.validate(ctx.index == 1, output="ok")
        after.append(ctx.index)
        return "no"

    result = Loop(body, max_iterations=4).run()
    assert (result.loop_round, result.output, after) == (2, "ok", [0])


def test_a_foreach_item_that_validates_ends_at_once_and_starts_no_further_item() -> None:
    def item(ctx: LoopContext) -> str:
        ctx.validate(ctx.item == "b", output=f"found {ctx.item}")
        return f"not {ctx.item}"

    result = ForEach(item, ["a", "b", "c"]).run()
    assert result == ["not a", "found b"]
    assert (result.succeeded, result.total, result.message) == (2, 3, "foreach 2/3")


# --- give-up message and callback -----------------------------------------------------------


def test_a_custom_give_up_message_replaces_the_generated_one_only_on_giving_up() -> None:
    never = Loop(
        lambda ctx: ctx.validate(False, "short"), max_iterations=3, give_up_message="no draft"
    )
    gave_up = never.run()
    assert (gave_up.stop_reason, gave_up.message) == (StopReason.MAX_ITERATIONS, "no draft")
    passes = Loop(lambda ctx: ctx.validate(True), max_iterations=3, give_up_message="no draft")
    assert passes.run().message == "Loop finished after 1 round(s): PASSED"
    default = Loop(lambda ctx: ctx.validate(False, "short"), max_iterations=2, give_up_message="")
    assert default.run().message == (
        "Loop finished after 2 round(s): MAX_ITERATIONS (the last check said: short)"
    )


def test_on_give_up_is_called_once_with_the_result_when_the_loop_gives_up() -> None:
    calls: list[LoopResult] = []
    result = Loop(lambda ctx: None, until="", max_iterations=2, on_give_up=calls.append).run()
    assert calls == [result]
    assert result.stop_reason is StopReason.MAX_ITERATIONS

    calls.clear()
    no_body = Loop(None, on_give_up=calls.append, give_up_message="nothing to run").run()
    assert [(c.stop_reason, c.message, c.loop_round) for c in calls] == [
        (StopReason.NO_BODY, "nothing to run", 0)
    ]
    assert no_body is calls[0]

    def stopped(ctx: LoopContext) -> None:
        raise Stopped(StopReason.CANCELLED, "user said stop")

    calls.clear()
    Loop(stopped, on_give_up=calls.append).run()
    assert [c.stop_reason for c in calls] == [StopReason.CANCELLED]


@pytest.mark.parametrize(
    "body",
    [
        lambda ctx: ctx.validate(True),
        lambda ctx: ctx.exit("enough"),
        lambda ctx: {"done": True},
    ],
)
def test_on_give_up_is_not_called_on_success(body: Any) -> None:
    calls: list[LoopResult] = []
    result = Loop(body, max_iterations=3, on_give_up=calls.append).run()
    assert result.stop_reason.is_success
    assert calls == []


def test_an_error_in_on_give_up_propagates() -> None:
    def broken(result: LoopResult) -> None:
        raise RuntimeError(f"notify failed after {result.loop_round}")

    with pytest.raises(RuntimeError, match="notify failed after 1"):
        Loop(lambda ctx: None, until="", max_iterations=1, on_give_up=broken).run()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"give_up_message": 3}, "give_up_message: must be text, got int"),
        ({"on_give_up": "notify"}, "on_give_up: must be callable, got str"),
    ],
)
def test_bad_give_up_settings_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Loop(lambda ctx: None, **kwargs)


# --- attacks: validating a round that is not running -------------------------------------------


def test_validating_a_context_kept_from_an_earlier_round_is_a_clear_error() -> None:
    kept: list[LoopContext] = []

    def body(ctx: LoopContext) -> None:
        kept.append(ctx)
        if ctx.index == 2:
            kept[0].validate(True)

    with pytest.raises(ConfigError, match="validate\\(\\) passed on the context of a round that"):
        Loop(body, max_iterations=5).run()

    def nested(ctx: LoopContext) -> None:
        kept.append(ctx)
        if ctx.index == 1:
            Loop(lambda inner: kept[0].validate(True), max_iterations=2).run()

    kept.clear()
    with pytest.raises(ConfigError, match="kept from an earlier round, or another item's"):
        Loop(nested, max_iterations=2).run()


def test_validating_a_sibling_items_context_is_a_clear_error() -> None:
    contexts: dict[int, LoopContext] = {}
    both = threading.Barrier(2, timeout=10)

    def item(ctx: LoopContext) -> int:
        contexts[ctx.index] = ctx
        both.wait()
        if ctx.index == 0:
            try:
                contexts[1].validate(True)
            finally:
                both.abort()  # item 1 stops waiting at once, not after the barrier's timeout
        else:
            with contextlib.suppress(threading.BrokenBarrierError):
                both.wait()  # item 1 runs on while item 0 validates its context
        return ctx.index

    with pytest.raises(ConfigError, match="another item's"):
        ForEach(item, [0, 1], concurrency=2).run()


def test_an_outer_validator_called_inside_an_async_foreach_item_ends_the_outer_round() -> None:
    async def outer(ctx: LoopContext) -> str:
        async def item(item_ctx: LoopContext) -> int:
            await asyncio.sleep(0.001 * item_ctx.item)
            if item_ctx.item == 2:
                ctx.validate(True, output="from an async item")
            return int(item_ctx.item)

        await ForEach(item, range(5), parallel=True).arun()
        return "outer went on"

    result = Loop(outer, max_iterations=3).run()
    assert (result.stop_reason, result.output, result.loop_round) == (
        StopReason.PASSED,
        "from an async item",
        1,
    )


def test_on_give_up_runs_after_the_loop_so_it_may_start_loops_of_its_own() -> None:
    follow_ups: list[int] = []

    def retry_elsewhere(result: LoopResult) -> None:
        follow_ups.append(Loop(lambda ctx: None, until="", max_iterations=2).run().loop_round)

    sealed = Loop(
        lambda ctx: None,
        until="",
        max_iterations=1,
        allow_nested=False,
        on_give_up=retry_elsewhere,
    )
    assert sealed.run().stop_reason is StopReason.MAX_ITERATIONS
    assert follow_ups == [2]
