"""The loop engine: variables, exit conditions, validator and exit, errors, bounds, templates."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.core.errors import ConfigError, Stopped
from harness.core.stop import StopReason
from harness.engine.condition import Combine, Condition
from harness.engine.foreach import ForEach
from harness.engine.loop import (
    MAX_DEPTH,
    MAX_ITERATIONS,
    Loop,
    LoopContext,
    LoopResult,
    Variable,
    Watchdog,
    check_max_iterations,
    finish_message,
)


def counter(ctx: LoopContext) -> dict[str, int]:
    ctx.vars.count += 1
    return {"count": ctx.vars.count}


# --- configuration ------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, 101, -1, 2.5, "3", True, None])
def test_max_iterations_outside_1_to_100_is_refused_at_construction(bad: Any) -> None:
    with pytest.raises(ConfigError, match="max_iterations: must be an integer from 1 to 100"):
        Loop(counter, max_iterations=bad)


def test_the_shared_cap_and_finish_message() -> None:
    assert MAX_ITERATIONS == 100
    assert check_max_iterations(100) == 100
    with pytest.raises(ConfigError, match=r"^max_iterations: must be .* 1 to 100, got True$"):
        check_max_iterations(True)
    assert finish_message(3, StopReason.MAX_ITERATIONS) == (
        "Loop finished after 3 round(s): MAX_ITERATIONS"
    )
    assert finish_message(0, StopReason.CONDITION_MET, "until x") == (
        "Loop finished after 0 round(s): CONDITION_MET (until x)"
    )


def test_max_iterations_bounds_are_allowed() -> None:
    assert Loop(None, max_iterations=1).max_iterations == 1
    assert Loop(None, max_iterations=100).max_iterations == 100


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"on_error": "ignore"}, "on_error: must be 'fail' or 'stop'"),
        ({"combine": "xor"}, "combine: must be 'and' or 'or'"),
        ({"until": "score ~ 8"}, "expected '<reference> <operator> <value>'"),
        ({"while_": []}, "while_: give at least one condition"),
    ],
)
def test_bad_settings_are_refused_at_construction(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Loop(counter, **kwargs)


def test_body_must_be_callable() -> None:
    with pytest.raises(ConfigError, match="body: must be callable"):
        Loop("not a function")  # type: ignore[arg-type]


def test_variable_types_are_inferred_from_initial_values() -> None:
    loop = Loop(None, variables={"draft": "", "score": 0.5, "done": False, "meta": {}, "log": []})
    assert {name: v.type for name, v in loop.variables.items()} == {
        "draft": "string",
        "score": "number",
        "done": "bool",
        "meta": "object",
        "log": "array",
    }


def test_typed_declarations_default_to_the_empty_value_of_their_type() -> None:
    loop = Loop(
        None,
        variables=[
            Variable("n", "number"),
            Variable("notes", "array"),
            Variable("s", "string", "x"),
        ],
    )
    assert loop.run().variables == {"n": 0, "notes": [], "s": "x"}


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ({"loop_round": 1}, "'loop_round' is reserved"),
        ({"": 1}, "non-empty identifier"),
        ({"two words": 1}, "non-empty identifier"),
        ({"x": None}, "variables.x: cannot tell the type"),
        ([Variable("a", "number"), Variable("a", "string")], "duplicate name 'a'"),
        (["a"], "expected Variable items"),
    ],
)
def test_bad_variables_are_refused(variables: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Loop(counter, variables=variables)


def test_variable_declarations_check_type_and_value() -> None:
    with pytest.raises(ConfigError, match="Variable.type of 'x'"):
        Variable("x", "integer")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="Variable.value of 'x': 'ten' is not a number"):
        Variable("x", "number", "ten")
    with pytest.raises(ConfigError, match="is not a number"):
        Variable("x", "number", True)


# --- variables at run time ------------------------------------------------------------------


def test_variables_carry_between_rounds_and_are_returned() -> None:
    def body(ctx: LoopContext) -> None:
        ctx.vars.total += ctx.index
        ctx.vars["log"] = [*ctx.vars.log, ctx.index]

    result = Loop(body, variables={"total": 0, "log": []}, max_iterations=4).run()
    assert result.variables == {"total": 6, "log": [0, 1, 2, 3]}
    assert [r.variables["total"] for r in result.history] == [0, 1, 3, 6]


def test_history_snapshots_do_not_change_with_in_place_edits() -> None:
    result = Loop(
        lambda ctx: ctx.vars.log.append(ctx.index), variables={"log": []}, max_iterations=3
    ).run()
    assert [r.variables["log"] for r in result.history] == [[0], [0, 1], [0, 1, 2]]


def test_assigning_a_wrong_type_names_the_variable_and_the_round() -> None:
    def body(ctx: LoopContext) -> None:
        if ctx.index == 1:
            ctx.vars.score = "high"

    with pytest.raises(
        ConfigError, match="loop variable 'score' is a number; cannot assign str"
    ) as info:
        Loop(body, variables={"score": 0}, max_iterations=3).run()
    assert info.value.__notes__ == ["raised in loop round 2"]


def test_assigning_an_undeclared_variable_is_refused() -> None:
    def body(ctx: LoopContext) -> None:
        ctx.vars.scroe = 3

    result = Loop(body, variables={"score": 0}, on_error="stop").run()
    assert result.stop_reason is StopReason.ERROR
    assert "no loop variable 'scroe'" in result.message


def test_run_time_initial_values_override_and_are_checked() -> None:
    loop = Loop(counter, variables={"count": 0}, until="count >= 5", max_iterations=10)
    assert loop.run(variables={"count": 3}).loop_round == 2
    assert loop.run().loop_round == 5
    with pytest.raises(ConfigError, match="is a number"):
        loop.run(variables={"count": "3"})
    with pytest.raises(ConfigError, match="no loop variable 'other'"):
        loop.run(variables={"other": 1})


def test_runs_do_not_share_mutable_initial_values() -> None:
    loop = Loop(lambda ctx: ctx.vars.log.append(1), variables={"log": []}, max_iterations=2)
    assert loop.run().variables == {"log": [1, 1]}
    assert loop.run().variables == {"log": [1, 1]}


# --- exit conditions ------------------------------------------------------------------------


def test_a_condition_already_met_runs_zero_rounds() -> None:
    calls: list[LoopContext] = []
    result = Loop(calls.append, variables={"score": 9}, until="score >= 8").run()
    assert calls == []
    assert result.loop_round == 0
    assert result.stop_reason is StopReason.CONDITION_MET
    assert result.history == ()
    assert result.message == "Loop finished after 0 round(s): CONDITION_MET (until score >= 8)"


def test_until_stops_after_the_round_that_meets_it() -> None:
    result = Loop(counter, variables={"count": 0}, until=Condition("count", ">=", 3)).run()
    assert (result.loop_round, result.stop_reason) == (3, StopReason.CONDITION_MET)
    assert result.output == {"count": 3}


def test_while_continues_while_it_holds() -> None:
    result = Loop(counter, variables={"count": 0}, while_="count < 3").run()
    assert (result.loop_round, result.stop_reason) == (3, StopReason.CONDITION_MET)
    assert "while count < 3 no longer holds" in result.message
    assert Loop(counter, variables={"count": 5}, while_="count < 3").run().loop_round == 0


def test_and_needs_every_condition_or_needs_one() -> None:
    def body(ctx: LoopContext) -> None:
        ctx.vars.a += 1
        ctx.vars.b += 2

    conditions = ["a >= 4", "b >= 4"]
    both = Loop(body, variables={"a": 0, "b": 0}, until=conditions, combine="and").run()
    either = Loop(body, variables={"a": 0, "b": 0}, until=conditions, combine="or").run()
    assert both.loop_round == 4
    assert either.loop_round == 2
    assert Loop(body, variables={"a": 0, "b": 0}, until="a >= 4 or b >= 4").run().loop_round == 2


def test_until_and_while_together_stop_when_either_says_so() -> None:
    loop = Loop(counter, variables={"count": 0}, until="count >= 5", while_="loop_round < 2")
    assert loop.run().loop_round == 2


def test_loop_round_counts_completed_rounds() -> None:
    result = Loop(lambda ctx: ctx.index, until="loop_round >= 3").run()
    assert result.loop_round == 3
    assert [r.round for r in result.history] == [1, 2, 3]


def test_a_condition_on_an_output_absent_this_round_is_not_met() -> None:
    outputs = [{"flag": 1, "done": False}, {}, {"flag": 2}]
    result = Loop(lambda ctx: outputs[ctx.index], until="flag != 1", max_iterations=5).run()
    assert result.loop_round == 3  # round 2 produced no 'flag': '!=' does not hold on it
    scores = [{"score": 9}, {"other": 1}]
    kept = Loop(
        lambda ctx: scores[ctx.index % 2], until="score >= 8 and loop_round >= 2", max_iterations=4
    )
    assert kept.run().loop_round == 3  # round 1's score does not count in round 2


def test_a_while_on_an_output_ends_before_the_first_round() -> None:
    calls: list[LoopContext] = []
    result = Loop(calls.append, while_="needs_retry == true").run()
    assert (calls, result.loop_round) == ([], 0)


def test_conditions_reach_the_whole_output_nested_keys_and_attributes() -> None:
    replies = ["working", "still working", "DONE: shipped"]
    assert (
        Loop(lambda ctx: replies[ctx.index], until="output starts_with DONE").run().loop_round == 3
    )
    nested = Loop(lambda ctx: {"review": {"score": 6 + ctx.index}}, until="review.score >= 8")
    assert nested.run().loop_round == 3


def test_a_variable_shadows_an_output_key_of_the_same_name() -> None:
    result = Loop(
        lambda ctx: {"score": 10}, variables={"score": 0}, until="score >= 8", max_iterations=3
    ).run()
    assert result.stop_reason is StopReason.MAX_ITERATIONS


# --- rounds, feedback, cap, validator, exit --------------------------------------------------


def test_each_round_gets_the_previous_output_as_input() -> None:
    seen: list[tuple[Any, Any, int, int]] = []

    def body(ctx: LoopContext) -> str:
        seen.append((ctx.input, ctx.item, ctx.index, ctx.total))
        return f"{ctx.input}+"

    result = Loop(body, max_iterations=3).run("draft")
    assert seen == [
        ("draft", "draft", 0, 3),
        ("draft+", "draft+", 1, 3),
        ("draft++", "draft++", 2, 3),
    ]
    assert result.output == "draft+++"
    assert [(r.input, r.output) for r in result.history] == [
        ("draft", "draft+"),
        ("draft+", "draft++"),
        ("draft++", "draft+++"),
    ]
    assert all(r.seconds >= 0 and r.error is None for r in result.history)


def test_the_cap_gives_up_with_max_iterations() -> None:
    result = Loop(counter, variables={"count": 0}, until="count >= 99", max_iterations=3).run()
    assert (result.loop_round, result.stop_reason) == (3, StopReason.MAX_ITERATIONS)
    assert result.message == "Loop finished after 3 round(s): MAX_ITERATIONS"
    assert result.output == {"count": 3}
    assert not result.stop_reason.is_success


def test_a_validator_pass_ends_the_loop_at_once() -> None:
    def body(ctx: LoopContext) -> str:
        draft = "good" if ctx.index == 1 else "bad"
        ctx.validate(draft == "good", f"draft was {draft}", output=draft)
        return draft

    result = Loop(body, max_iterations=5).run()
    assert (result.loop_round, result.stop_reason, result.output) == (2, StopReason.PASSED, "good")
    assert result.message == "Loop finished after 2 round(s): PASSED (draft was good)"
    assert [(r.passed, r.note) for r in result.history] == [
        (False, "draft was bad"),
        (True, "draft was good"),
    ]


def test_a_validator_that_never_passes_gives_up_at_the_cap() -> None:
    result = Loop(lambda ctx: ctx.validate(False, "too short"), max_iterations=3).run()
    assert result.stop_reason is StopReason.MAX_ITERATIONS
    assert result.message == (
        "Loop finished after 3 round(s): MAX_ITERATIONS (the last check said: too short)"
    )


def test_an_explicit_exit_ends_after_its_round() -> None:
    def body(ctx: LoopContext) -> int:
        if ctx.index == 1:
            ctx.exit("nothing left to do")
        return ctx.index

    result = Loop(body, until="loop_round >= 5", max_iterations=9).run()
    assert (result.loop_round, result.stop_reason, result.output) == (2, StopReason.EXIT, 1)
    assert result.message.endswith("EXIT (nothing left to do)")


def test_no_body_runs_nothing() -> None:
    result = Loop(None, variables={"score": 9}, until="score >= 8").run()
    assert (result.loop_round, result.stop_reason, result.history) == (0, StopReason.NO_BODY, ())
    assert result.message == "Loop finished after 0 round(s): NO_BODY"


# --- errors and stops ----------------------------------------------------------------------


def explode_in_round_3(ctx: LoopContext) -> int:
    ctx.vars.count += 1
    if ctx.index == 2:
        raise ZeroDivisionError("boom")
    return ctx.index


def test_errors_fail_fast_with_the_round_number() -> None:
    with pytest.raises(ZeroDivisionError, match="boom") as info:
        Loop(explode_in_round_3, variables={"count": 0}).run()
    assert info.value.__notes__ == ["raised in loop round 3"]


def test_on_error_stop_records_error_and_keeps_the_last_good_state() -> None:
    result = Loop(explode_in_round_3, variables={"count": 0}, on_error="stop").run()
    assert (result.stop_reason, result.loop_round, result.output) == (StopReason.ERROR, 2, 1)
    assert result.variables == {"count": 2}
    assert result.message == (
        "Loop finished after 2 round(s): ERROR (round 3: ZeroDivisionError: boom)"
    )
    failed = result.history[-1]
    assert (failed.round, failed.error, failed.variables) == (
        3,
        "ZeroDivisionError: boom",
        {"count": 3},
    )


def test_a_body_raising_stopped_ends_the_loop_with_its_reason() -> None:
    def body(ctx: LoopContext) -> None:
        if ctx.index == 1:
            raise Stopped(StopReason.BUDGET_COST, "cost budget of $1 used")

    result = Loop(body, max_iterations=5).run()
    assert (result.stop_reason, result.loop_round) == (StopReason.BUDGET_COST, 1)
    assert result.message.endswith("BUDGET_COST (cost budget of $1 used)")


def test_a_body_returning_an_awaitable_from_a_sync_function_is_an_error() -> None:
    async def work() -> int:
        return 1

    with pytest.raises(ConfigError, match="define it with async def"):
        Loop(lambda ctx: work(), max_iterations=1).run()


# --- nesting and the watchdog ---------------------------------------------------------------


def nested(levels: int, leaf: Any = "leaf") -> Any:
    """``levels`` loops, each running the next inside its single round."""
    if levels == 0:
        return leaf
    return Loop(lambda ctx: nested(levels - 1, leaf), max_iterations=1).run().output


def test_five_nested_loops_run_and_a_sixth_is_refused() -> None:
    assert MAX_DEPTH == 5
    assert nested(5) == "leaf"
    with pytest.raises(
        ConfigError, match="loops nest at most 5 deep; this one would be level 6"
    ) as info:
        nested(6)
    assert info.value.__notes__ == ["raised in loop round 1"] * 5


def test_nesting_is_counted_through_foreach_and_its_threads() -> None:
    def four_more(ctx: LoopContext) -> Any:
        return nested(4)

    assert ForEach(four_more, [1, 2], concurrency=2).run() == ["leaf", "leaf"]
    with pytest.raises(ConfigError, match="would be level 6"):
        Loop(lambda ctx: ForEach(four_more, [1, 2], concurrency=2).run(), max_iterations=1).run()


def test_sibling_loops_do_not_add_up_depth() -> None:
    def siblings(ctx: LoopContext) -> list[Any]:
        return [nested(4) for _ in range(3)]

    assert Loop(siblings, max_iterations=2).run().output == ["leaf"] * 3


def test_the_watchdog_counts_body_executions_across_nested_loops() -> None:
    watchdog = Watchdog(max_bodies=7)
    inner_results: list[LoopResult] = []

    def outer(ctx: LoopContext) -> None:
        inner_results.append(Loop(lambda c: None, max_iterations=3).run())

    result = Loop(outer, max_iterations=10, watchdog=watchdog).run()
    # outer, inner x3, outer, inner x2 = 7 calls; the inner's third and outer's third are refused
    assert result.stop_reason is StopReason.TIMEOUT
    assert result.loop_round == 2
    assert [r.loop_round for r in inner_results] == [3, 2]
    assert inner_results[-1].stop_reason is StopReason.TIMEOUT
    assert watchdog.bodies == 7
    assert "limit of 7 body executions" in result.message


def test_the_watchdog_stops_a_run_that_takes_too_long() -> None:
    started = time.monotonic()
    result = Loop(
        lambda ctx: time.sleep(0.5), max_iterations=100, watchdog=Watchdog(seconds=0.1)
    ).run()
    took = time.monotonic() - started
    assert result.stop_reason is StopReason.TIMEOUT
    assert 1 <= result.loop_round < 100
    assert 0.1 <= took < 25  # all 100 rounds would take 50 s


def test_the_watchdog_cancels_an_async_body_at_its_deadline() -> None:
    async def slow(ctx: LoopContext) -> None:
        await asyncio.sleep(60)

    started = time.monotonic()
    result = Loop(slow, max_iterations=3, watchdog=Watchdog(seconds=0.1)).run()
    assert (result.stop_reason, result.loop_round) == (StopReason.TIMEOUT, 0)
    assert time.monotonic() - started < 30  # the body alone would sleep 60 s


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"seconds": 0}, "Watchdog.seconds"),
        ({"max_bodies": 0}, "Watchdog.max_bodies"),
        ({"max_bodies": 1.5}, "Watchdog.max_bodies"),
    ],
)
def test_watchdog_limits_must_be_positive(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Watchdog(**kwargs)


# --- async bodies -----------------------------------------------------------------------------


async def async_counter(ctx: LoopContext) -> int:
    await asyncio.sleep(0)
    ctx.vars.count += 1
    return ctx.vars.count


def test_async_bodies_run_from_sync_code() -> None:
    result = Loop(async_counter, variables={"count": 0}, until="count >= 3").run()
    assert (result.loop_round, result.output) == (3, 3)


def test_arun_runs_async_and_sync_bodies() -> None:
    async def main() -> tuple[LoopResult, LoopResult]:
        return (
            await Loop(async_counter, variables={"count": 0}, max_iterations=2).arun(),
            await Loop(counter, variables={"count": 0}, max_iterations=2).arun(),
        )

    first, second = asyncio.run(main())
    assert (first.output, second.output) == (2, {"count": 2})


def test_run_inside_an_event_loop_with_an_async_body_points_to_arun() -> None:
    async def main() -> None:
        Loop(async_counter, variables={"count": 0}).run()

    with pytest.raises(ConfigError, match="await arun"):
        asyncio.run(main())


def test_async_errors_fail_fast_with_the_round_number() -> None:
    async def body(ctx: LoopContext) -> None:
        if ctx.index == 1:
            raise KeyError("missing")

    with pytest.raises(KeyError) as info:
        Loop(body).run()
    assert info.value.__notes__ == ["raised in loop round 2"]


# --- templates --------------------------------------------------------------------------------


def test_templates_render_loop_context_and_variables() -> None:
    def body(ctx: LoopContext) -> str:
        return ctx.render(
            "Round {{loop.index}}/{{ loop.total }}: improve {{loop.item}} (score {{score}}, {{$loop.index}}) {{meta}}"
        )

    result = Loop(body, variables={"score": 7, "meta": {"k": [1]}}, max_iterations=2).run(
        input="the draft"
    )
    assert result.history[0].output == 'Round 0/2: improve the draft (score 7, 0) {"k": [1]}'
    assert result.history[1].output.startswith("Round 1/2: improve Round 0/2")


def test_the_input_placeholder_is_the_previous_output_or_the_item() -> None:
    def body(ctx: LoopContext) -> dict[str, str]:
        return {"title": ctx.render("[{{input.title}}]") if ctx.index else "first"}

    chained = Loop(body, max_iterations=3).run(input={"title": "unused"})
    plain = Loop(lambda ctx: ctx.render("<{{input}}>"), max_iterations=2).run()
    items = ForEach(lambda ctx: ctx.render("{{input}} #{{loop.index}}"), ["a", "b"]).run()

    assert [r.output["title"] for r in chained.history] == ["first", "[first]", "[[first]]"]
    assert [r.output for r in plain.history] == ["<>", "<<>>"]
    assert items == ["a #0", "b #1"]


def test_an_unknown_placeholder_is_an_error_naming_it() -> None:
    result = Loop(
        lambda ctx: ctx.render("Hi {{loop.nope}}"), max_iterations=1, on_error="stop"
    ).run()
    assert result.stop_reason is StopReason.ERROR
    assert "'{{loop.nope}}'" in result.message


# --- properties -------------------------------------------------------------------------------


@given(
    max_iterations=st.integers(1, 100),
    stop_at=st.integers(0, 150),
    exit_at=st.one_of(st.none(), st.integers(0, 150)),
    combine=st.sampled_from(["and", "or"]),
)
def test_property_loop_round_never_exceeds_max_iterations(
    max_iterations: int, stop_at: int, exit_at: int | None, combine: Combine
) -> None:
    def body(ctx: LoopContext) -> None:
        if ctx.index + 1 == exit_at:
            ctx.exit()

    result = Loop(
        body, until=[f"loop_round >= {stop_at}"], combine=combine, max_iterations=max_iterations
    ).run()
    assert 0 <= result.loop_round <= max_iterations
    assert len(result.history) == result.loop_round
    ends = [stop_at, max_iterations] + ([exit_at] if exit_at else [])
    assert result.loop_round == min(ends)


def test_a_rounds_record_cannot_be_changed_and_reads_by_name() -> None:
    result = Loop(lambda ctx: {"n": ctx.index}, until="", max_iterations=2).run()

    first = result.history[0]
    assert (first.round, first.output, first.steps, first.error) == (1, {"n": 0}, 1, None)
    with pytest.raises(AttributeError):
        first.output = "changed"  # type: ignore[misc]
    assert result.history[1].input == {"n": 0}
