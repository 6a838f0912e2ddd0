"""When a loop stops: the default ``done == true``, bare references, empty conditions, do-while
and conditions over the iteration history (seeds 001 and 004)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness import Condition, ConfigError, Loop, LoopResult, StopReason
from harness.engine.loop import LoopContext


def step_output(ctx: LoopContext) -> dict[str, Any]:
    return {"n": ctx.index, "done": ctx.index == 2}


# --- seed 001: the default stop condition -----------------------------------------------------


def test_with_no_condition_an_output_with_done_true_stops_the_loop() -> None:
    result = Loop(step_output, max_iterations=10).run()
    assert isinstance(result, LoopResult)
    assert (result.loop_round, result.stop_reason, result.done) == (
        3,
        StopReason.CONDITION_MET,
        True,
    )
    assert result.message == (
        "Loop finished after 3 round(s): CONDITION_MET (until output.done == true)"
    )
    assert result.node_message == "looped 3 (done)"
    assert result.node_output == {"n": 2, "done": True, "_iterations": 3, "_done": True}


@pytest.mark.parametrize("done", [1, "true", "yes", None, False, [True]])
def test_only_a_boolean_true_done_stops_by_default(done: Any) -> None:
    result = Loop(lambda ctx: {"done": done}, max_iterations=4).run()
    assert (result.loop_round, result.stop_reason, result.done) == (
        4,
        StopReason.MAX_ITERATIONS,
        False,
    )
    assert result.node_message == "looped 4 (max)"
    assert result.node_output == {"done": done, "_iterations": 4, "_done": False}


def test_the_default_reads_an_object_output_and_ignores_other_outputs() -> None:
    @dataclass
    class Report:
        done: bool

    assert Loop(lambda ctx: Report(ctx.index == 1), max_iterations=5).run().loop_round == 2
    plain = Loop(lambda ctx: "done", max_iterations=3).run()
    assert (plain.loop_round, plain.stop_reason) == (3, StopReason.MAX_ITERATIONS)
    assert plain.node_output == {"output": "done", "_iterations": 3, "_done": False}


def test_a_variable_named_done_does_not_replace_the_output_default() -> None:
    def body(ctx: LoopContext) -> dict[str, bool]:
        ctx.vars.done = True
        return {"done": ctx.index == 3}

    result = Loop(body, variables={"done": False}, max_iterations=10).run()
    assert result.loop_round == 4


def test_any_condition_given_replaces_the_default() -> None:
    result = Loop(lambda ctx: {"done": True}, until="loop_round >= 3", max_iterations=9).run()
    assert result.loop_round == 3
    assert result.message.endswith("(until loop_round >= 3)")
    only_while = Loop(lambda ctx: {"done": True}, while_="loop_round < 2", max_iterations=9)
    assert only_while.run().loop_round == 2


# --- seed 004: empty condition, bare reference ------------------------------------------------


@pytest.mark.parametrize("blank", [{"until": ""}, {"while_": ""}, {"until": "  "}])
def test_an_empty_condition_string_runs_until_the_cap(blank: dict[str, str]) -> None:
    result = Loop(lambda ctx: {"done": True}, max_iterations=4, **blank).run()
    assert (result.loop_round, result.stop_reason, result.done) == (
        4,
        StopReason.MAX_ITERATIONS,
        False,
    )
    assert result.message == "Loop finished after 4 round(s): MAX_ITERATIONS"


def test_an_empty_condition_still_honours_a_validator_and_the_other_condition() -> None:
    passed = Loop(lambda ctx: ctx.validate(ctx.index == 1), until="", max_iterations=5).run()
    assert (passed.loop_round, passed.stop_reason) == (2, StopReason.PASSED)
    both = Loop(lambda ctx: None, until="", while_="loop_round < 3", max_iterations=9).run()
    assert both.loop_round == 3


def test_an_empty_condition_is_refused_where_one_condition_is_required() -> None:
    with pytest.raises(ConfigError, match="condition '': empty"):
        Condition.parse("")
    with pytest.raises(ConfigError, match="until: give at least one condition"):
        Loop(lambda ctx: None, until=[])


def test_a_bare_reference_is_a_truth_test() -> None:
    assert Condition.parse("needs_retry") == Condition("needs_retry", "truthy")
    assert Condition.parse("not $memory.needs_retry") == Condition("memory.needs_retry", "falsy")
    assert str(Condition("needs_retry", "truthy")) == "needs_retry"
    assert str(Condition("x.y", "falsy")) == "not x.y"

    def body(ctx: LoopContext) -> None:
        ctx.vars.needs_retry = ctx.index < 2

    for kwargs in ({"while_": "needs_retry"}, {"until": "not needs_retry"}):
        result = Loop(body, variables={"needs_retry": True}, max_iterations=10, **kwargs).run()
        assert (result.loop_round, result.stop_reason) == (3, StopReason.CONDITION_MET)


@pytest.mark.parametrize(
    ("value", "truthy"),
    [(True, True), (1, True), ("false", True), ([0], True), (False, False), (0, False),
     ("", False), ([], False), ({}, False), (None, False)],
)  # fmt: skip
def test_truthiness_is_pythons(value: Any, truthy: bool) -> None:
    result = Loop(lambda ctx: {"enough": value}, until="enough", max_iterations=3).run()
    assert result.loop_round == (1 if truthy else 3)
    negated = Loop(lambda ctx: {"enough": value}, until="not enough", max_iterations=3).run()
    assert negated.loop_round == (3 if truthy else 1)


def test_a_bare_reference_that_does_not_resolve_is_not_met() -> None:
    assert Loop(lambda ctx: {}, while_="absent", max_iterations=5).run().loop_round == 0
    assert Loop(lambda ctx: {}, until="absent", max_iterations=5).run().loop_round == 5
    assert Loop(lambda ctx: {}, until="not absent", max_iterations=5).run().loop_round == 5


@pytest.mark.parametrize("field", ["while_", "until"])
def test_a_dollar_reference_to_an_unknown_root_is_refused_naming_it(field: str) -> None:
    ran: list[int] = []
    with pytest.raises(ConfigError) as caught:
        Loop(lambda ctx: ran.append(1), max_iterations=3, **{field: "$memory.loop.needs_retry"})
    message = str(caught.value)
    assert message.startswith(f"{field}: reference '$memory.loop.needs_retry'")
    assert "unknown root 'memory'" in message
    assert "known roots are loop_round, output, history, vars, loop" in message
    assert ran == []
    with pytest.raises(ConfigError, match=r"known roots are count, loop_round, .* 'mem'"):
        Loop(lambda ctx: None, variables={"count": 0}, until=["count >= 1", "$mem == 1"])


def test_a_dollar_reference_to_a_known_root_runs() -> None:
    retry = Loop(
        lambda ctx: ctx.vars.__setitem__("memory", {"loop": {"needs_retry": ctx.index < 1}}),
        variables={"memory": {"loop": {"needs_retry": True}}},
        while_="$memory.loop.needs_retry",
        max_iterations=5,
    )
    assert retry.run().loop_round == 2
    counted = Loop(lambda ctx: {"n": ctx.index}, until="$output.n >= 2", max_iterations=9)
    assert counted.run().loop_round == 3
    assert Loop(lambda ctx: None, until="$loop_round >= 4", max_iterations=9).run().loop_round == 4


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("needs retry", "expected '<reference> <operator> <value>'"),
        ("history[-1.output", r"reference 'history\[-1.output': at position 7 \('\['\)"),
        ("history[-1]..x == 1", r"at position 12 \('\.'\): expected a key or an index"),
        ("9lives", r"at position 0 \('9'\): expected a name"),
        ("not", None),
    ],
)
def test_bad_references_name_the_position(text: str, message: str | None) -> None:
    if message is None:  # 'not' alone is a reference to a variable named 'not'
        assert Condition.parse(text) == Condition("not", "truthy")
        return
    with pytest.raises(ConfigError, match=message):
        Loop(lambda ctx: None, until=text)


# --- seed 004: do-while -----------------------------------------------------------------------


def test_do_while_runs_the_body_before_the_first_check() -> None:
    def body(ctx: LoopContext) -> dict[str, bool]:
        return {"more": ctx.index < 2}

    flag = {"variables": {"again": False}, "while_": "again", "max_iterations": 5}
    assert Loop(lambda ctx: None, **flag).run().loop_round == 0
    assert Loop(lambda ctx: None, do_while=True, **flag).run().loop_round == 1
    assert Loop(body, while_="more", max_iterations=9).run().loop_round == 0
    result = Loop(body, while_="more", do_while=True, max_iterations=9).run()
    assert (result.loop_round, result.stop_reason) == (3, StopReason.CONDITION_MET)
    met = Loop(lambda ctx: None, variables={"x": 5}, until="x >= 1", do_while=True).run()
    assert (met.loop_round, met.stop_reason, met.done) == (1, StopReason.CONDITION_MET, True)


# --- seed 004: conditions over the history ----------------------------------------------------


def scores(*values: int) -> Any:
    return lambda ctx: {"score": values[ctx.index]}


def test_conditions_read_the_iteration_history() -> None:
    two_good_rounds = ["history[-1].output.score >= 5", "history[-2].output.score >= 5"]
    result = Loop(scores(6, 1, 5, 7, 9, 9), until=two_good_rounds, max_iterations=6).run()
    assert (result.loop_round, result.output) == (4, {"score": 7})
    assert result.message.endswith(
        "(until history[-1].output.score >= 5 and history[-2].output.score >= 5)"
    )
    first = Loop(scores(3, 4, 5), until="history[0].output.score == 3", max_iterations=3)
    assert first.run().loop_round == 1
    too_far = Loop(scores(1, 1, 1), until="history[-9].output.score == 1", max_iterations=3)
    assert too_far.run().stop_reason is StopReason.MAX_ITERATIONS


def test_conditions_read_vars_output_and_loop_roots() -> None:
    def body(ctx: LoopContext) -> dict[str, Any]:
        ctx.vars.y += 2
        return {"x": ctx.index * 10}

    assert (
        Loop(body, variables={"y": 0}, until="vars.y >= 6", max_iterations=9).run().loop_round == 3
    )
    assert (
        Loop(body, variables={"y": 0}, until="output.x == 20", max_iterations=9).run().loop_round
        == 3
    )
    assert (
        Loop(body, variables={"y": 0}, until="loop.index >= 4", max_iterations=9).run().loop_round
        == 5
    )
    assert (
        Loop(body, variables={"y": 0}, until="loop.total == 7", max_iterations=7).run().loop_round
        == 0
    )
    assert (
        Loop(body, variables={"y": 0}, until="history[-1].variables.y == 4", max_iterations=9)
        .run()
        .loop_round
        == 2
    )  # noqa: E501


def test_history_conditions_before_round_one_are_not_met() -> None:
    result = Loop(lambda ctx: {}, while_="history[-1].output is empty", max_iterations=3).run()
    assert result.loop_round == 0
    assert Loop(lambda ctx: {}, until="loop.index >= 0", max_iterations=3).run().loop_round == 1


# --- the property from the issue --------------------------------------------------------------


@given(
    start=st.integers(-5, 120),
    target=st.integers(-5, 120),
    cap=st.integers(1, 100),
    do_while=st.booleans(),
    form=st.sampled_from(["until", "while", "bare-while", "bare-until", "history"]),
)
def test_property_rounds_are_the_first_round_the_condition_holds_or_the_cap(
    start: int, target: int, cap: int, do_while: bool, form: str
) -> None:
    def body(ctx: LoopContext) -> dict[str, int]:
        ctx.vars.n += 1
        ctx.vars.below = ctx.vars.n < target
        return {"n": ctx.vars.n}

    conditions: dict[str, Any] = {
        "until": {"until": f"n >= {target}"},
        "while": {"while_": Condition("n", "<", target)},
        "bare-while": {"while_": "below"},
        "bare-until": {"until": "not below"},
        "history": {"until": f"history[-1].output.n >= {target}"},
    }[form]
    variables = {"n": start, "below": start < target}
    result = Loop(
        body, variables=variables, max_iterations=cap, do_while=do_while, **conditions
    ).run()

    first_check = 1 if do_while or form == "history" else 0
    holds_at = max(target - start, first_check)
    assert result.loop_round == min(holds_at, cap) == len(result.history)
    assert result.variables["n"] == start + result.loop_round
    met = holds_at <= cap
    assert result.stop_reason is (StopReason.CONDITION_MET if met else StopReason.MAX_ITERATIONS)
    assert result.done is met
