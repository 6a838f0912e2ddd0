"""A loop's exit conditions as given: the default, blank meaning none, and the public names."""

from __future__ import annotations

import pytest

from harness.core.errors import ConfigError
from harness.engine.condition import DONE, MISSING, Condition, ConditionSet, exit_conditions
from harness.engine.operators import Op


def test_with_neither_given_the_loop_stops_when_its_output_is_done() -> None:
    assert exit_conditions(None, None, "and") == (ConditionSet((DONE,)), None)
    assert Condition("output.done", Op.EQ, True) == DONE
    with pytest.raises(ConfigError, match="^combine: must be 'and' or 'or', got 'xor'$"):
        exit_conditions(None, None, "xor")


@pytest.mark.parametrize("blank", ["", "  \n"])
def test_a_blank_condition_means_none_and_the_default_is_not_applied(blank: str) -> None:
    assert exit_conditions(blank, None, "and") == (None, None)
    until, while_ = exit_conditions(blank, "score < 8", "or")
    assert until is None
    assert while_ == ConditionSet((Condition("score", Op.LT, 8),))  # one condition: nothing to join
    assert exit_conditions("done", blank, "and") == (
        ConditionSet((Condition("done", Op.TRUTHY),), "and"), None,
    )  # fmt: skip


def test_conditions_given_as_a_list_are_joined_as_asked() -> None:
    until, while_ = exit_conditions(["a", "not b"], None, "or")
    assert until == ConditionSet((Condition("a", Op.TRUTHY), Condition("b", Op.FALSY)), "or")
    assert while_ is None


def test_a_star_import_gives_exactly_the_public_names() -> None:
    names: dict[str, object] = {}
    exec("from harness.engine.condition import *", names)  # noqa: S102 - the import under test
    assert sorted(n for n in names if n != "__builtins__") == [
        "Combine", "Condition", "ConditionSet", "MISSING", "Op", "Root", "exit_conditions",
    ]  # fmt: skip


def test_a_bare_reference_that_is_not_one_is_named_with_the_condition() -> None:
    with pytest.raises(ConfigError) as error:
        Condition.parse("1abc")
    assert str(error.value) == (
        "condition '1abc': reference '1abc': at position 0 ('1'): expected a name (a letter or "
        "'_' first)"
    )


def test_a_condition_on_a_missing_value_does_not_hold_and_says_so_with_false() -> None:
    for text in ("needs_retry", "not needs_retry", "score >= 8"):
        assert Condition.parse(text).holds(lambda name: {}.get(name, MISSING)) is False
