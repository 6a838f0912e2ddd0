"""Exit conditions: operators, parsing, paths, missing values, AND/OR sets."""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.core.errors import ConfigError
from harness.engine.condition import Condition, ConditionSet, Op
from harness.engine.operators import UNARY
from harness.engine.reference import MISSING, lookup


def scope(**values: Any) -> Any:
    """A root that knows ``values`` and nothing else."""
    return lambda name: values.get(name, MISSING)


@pytest.mark.parametrize(
    ("value", "op", "right", "expected"),
    [
        (8, "==", 8, True),
        (8.0, "==", 8, True),
        ("8", "==", 8, True),
        ("eight", "==", 8, False),
        (True, "==", 1, False),
        (True, "==", True, True),
        (None, "==", None, True),
        ("a", "!=", "b", True),
        (9, ">", 8, True),
        (8, ">", 8, False),
        (8, ">=", 8, True),
        ("9", ">=", 8, True),
        (7, "<", 8, True),
        (8, "<=", 8, True),
        ("abc", "<", "abd", True),
        ("abc", ">", 1, False),
        ([1], ">", 0, False),
        ("the tests pass", "contains", "pass", True),
        (["a", "b"], "contains", "b", True),
        ({"key": 1}, "contains", "key", True),
        ([1, 2], "contains", "2", True),
        (5, "contains", 5, False),
        ("the tests pass", "not_contains", "fail", True),
        (["a"], "not contains", "a", False),
        (5, "not_contains", 1, False),
        ("draft: ok", "starts_with", "draft", True),
        ("draft: ok", "starts with", "ok", False),
        ("draft: ok", "ends_with", "ok", True),
        (["draft"], "starts_with", "draft", False),
        ("", "is_empty", None, True),
        ([], "is empty", None, True),
        ({}, "is_empty", None, True),
        (None, "is_empty", None, True),
        (0, "is_empty", None, False),
        ("x", "is not empty", None, True),
        ([], "is_not_empty", None, False),
    ],
)
def test_operator_table(value: Any, op: str, right: Any, expected: bool) -> None:
    assert Condition("x", op, right).holds(scope(x=value)) is expected


@pytest.mark.parametrize("op", list(Op))
def test_no_operator_holds_on_a_missing_value(op: Op) -> None:
    right = None if op in UNARY else 1
    condition = Condition("absent", op, right)
    assert not condition.holds(scope(present=1))
    assert not Condition(f"present.{'deeper'}", op, right).holds(scope(present={"other": 1}))


def test_case_insensitive_comparisons() -> None:
    assert Condition("x", "==", "DONE", case_sensitive=False).holds(scope(x="done"))
    assert not Condition("x", "==", "DONE").holds(scope(x="done"))
    assert Condition("x", "contains", "PASS", case_sensitive=False).holds(scope(x="all passed"))
    assert Condition("x", "contains", "a", case_sensitive=False).holds(scope(x=["A", "B"]))
    assert Condition("x", "ends_with", "OK", case_sensitive=False).holds(scope(x="is ok"))
    assert Condition("x", "<", "B", case_sensitive=False).holds(scope(x="a"))


@dataclass
class Verdict:
    score: float
    _secret: int = 1


def test_paths_step_into_objects_arrays_and_attributes() -> None:
    root = scope(result={"checks": [{"ok": True}, {"ok": False}]}, verdict=Verdict(9))
    assert Condition("result.checks.1.ok", "==", False).holds(root)
    assert Condition("verdict.score", ">=", 8).holds(root)
    assert lookup(root, ["result", "checks", "7"]) is MISSING
    assert lookup(root, ["result", "checks", "x"]) is MISSING
    assert lookup(root, ["verdict", "_secret"]) is MISSING
    assert lookup(scope(text="abc"), ["text", "upper"]) is MISSING


@pytest.mark.parametrize(
    ("text", "left", "op", "right"),
    [
        ("score >= 8", "score", Op.GE, 8),
        ("score>=8.5", "score", Op.GE, 8.5),
        ("result.done == true", "result.done", Op.EQ, True),
        ("done == True", "done", Op.EQ, True),
        ("status != null", "status", Op.NE, None),
        ('title == "two words"', "title", Op.EQ, "two words"),
        ("title == 'two words'", "title", Op.EQ, "two words"),
        ("title contains two words", "title", Op.CONTAINS, "two words"),
        ("tags contains [1]", "tags", Op.CONTAINS, [1]),
        ("log not contains ERROR", "log", Op.NOT_CONTAINS, "ERROR"),
        ("log NOT_CONTAINS ERROR", "log", Op.NOT_CONTAINS, "ERROR"),
        ("name starts with draft", "name", Op.STARTS_WITH, "draft"),
        ("name ends_with .md", "name", Op.ENDS_WITH, ".md"),
        ("notes is empty", "notes", Op.IS_EMPTY, None),
        ("notes is not empty", "notes", Op.IS_NOT_EMPTY, None),
        ("  loop_round   <   3  ", "loop_round", Op.LT, 3),
    ],
)
def test_parse(text: str, left: str, op: Op, right: Any) -> None:
    assert Condition.parse(text) == Condition(left, op, right)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("score ~= 8", "expected '<reference> <operator> <value>'"),
        ("scorecontains 8", "expected '<reference> <operator> <value>'"),
        ("", "empty; give e.g. 'score >= 8'"),
        ("score[x] > 1", r"reference 'score\[x\]': at position 5 \('\['\)"),
        ("score >=", "'>=' needs a right-hand value"),
        ("notes is empty 3", "takes no right-hand value"),
        ("a > 1 and b > 2", "joins several conditions"),
    ],
)
def test_parse_errors_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Condition.parse(text)


def test_construction_errors_name_the_field() -> None:
    with pytest.raises(ConfigError, match="field 'op'"):
        Condition("x", "resembles", 1)
    with pytest.raises(ConfigError, match="field 'left'"):
        Condition("", "==", 1)
    with pytest.raises(ConfigError, match="field 'left'"):
        Condition("a..b", "==", 1)
    with pytest.raises(ConfigError, match="field 'right'"):
        Condition("x", "contains")


def test_condition_set_and_or() -> None:
    both = ConditionSet.parse("a >= 1 and b == 2")
    either = ConditionSet.parse("a >= 1 OR b == 2")
    assert both.combine == "and"
    assert either.combine == "or"
    assert not both.holds(scope(a=1, b=3))
    assert both.holds(scope(a=1, b=2))
    assert either.holds(scope(a=0, b=2))
    assert not either.holds(scope(a=0, b=3))
    assert str(both) == "a >= 1 and b == 2"


def test_condition_set_keeps_quoted_connectives_and_refuses_mixtures() -> None:
    quoted = ConditionSet.parse("title == 'salt and pepper' and n > 1")
    assert quoted.conditions == (
        Condition("title", "==", "salt and pepper"),
        Condition("n", ">", 1),
    )
    with pytest.raises(ConfigError, match="mixes 'and' with 'or'"):
        ConditionSet.parse("a > 1 and b > 2 or c > 3")


def test_condition_set_build_from_each_form() -> None:
    one = Condition("a", ">", 1)
    assert ConditionSet.build(None, "and", "until") is None
    assert ConditionSet.build(one, "and", "until") == ConditionSet((one,), "and")
    built = ConditionSet.build([one, "b < 2"], "or", "until")
    assert built == ConditionSet((one, Condition("b", "<", 2)), "or")
    with pytest.raises(ConfigError, match="until: give at least one"):
        ConditionSet.build([], "and", "until")
    with pytest.raises(ConfigError, match="while_: expected a Condition"):
        ConditionSet.build([3], "and", "while_")  # type: ignore[list-item]
    with pytest.raises(ConfigError, match="combine"):
        ConditionSet.build(one, "xor", "until")


numbers = st.one_of(
    st.integers(-(10**6), 10**6), st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
)
json_values = st.recursive(
    st.none() | st.booleans() | numbers | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4)
    ),
    max_leaves=5,
)
ORDER = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}


@given(a=numbers, b=numbers, op=st.sampled_from(sorted(ORDER)))
def test_property_numbers_order_as_python_does(a: float, b: float, op: str) -> None:
    assert Condition("x", op, b).holds(scope(x=a)) is ORDER[op](a, b)
    assert Condition("x", op, b).holds(scope(x=str(a))) is ORDER[op](float(str(a)), b)


@given(value=json_values, right=json_values)
def test_property_present_values_split_cleanly(value: Any, right: Any) -> None:
    root = scope(x=value)
    assert Condition("x", "==", right).holds(root) != Condition("x", "!=", right).holds(root)
    assert Condition("x", "is_empty").holds(root) != Condition("x", "is_not_empty").holds(root)
    if right is not None:
        contains = Condition("x", "contains", right).holds(root)
        lacks = Condition("x", "not_contains", right).holds(root)
        container = isinstance(value, str | list | dict)
        assert (contains != lacks) if container else not (contains or lacks)


@given(value=json_values, right=json_values, op=st.sampled_from(list(Op)))
def test_property_a_missing_path_never_holds(value: Any, right: Any, op: Op) -> None:
    right = None if op in UNARY else (right if right is not None else 0)
    assert not Condition("x.no_such_key", op, right).holds(scope(x={"key": value}))
    assert not Condition("y", op, right).holds(scope(x=value))


@given(a=st.text(max_size=10), b=st.text(max_size=10))
def test_property_strings_compare_as_python_does(a: str, b: str) -> None:
    root = scope(x=a)
    assert Condition("x", "contains", b).holds(root) is (b in a)
    assert Condition("x", "starts_with", b).holds(root) is a.startswith(b)
    assert Condition("x", "==", b, case_sensitive=False).holds(root) is (
        a.casefold() == b.casefold()
    )
    assert Condition("x", "<", b).holds(root) is (a < b)


plain_words = st.text("abcdefghij", min_size=1, max_size=6)


@given(
    left=st.lists(plain_words, min_size=1, max_size=3).map(".".join),
    op=st.sampled_from(list(Op)),
    right=st.one_of(
        st.integers(), st.booleans(), st.text(max_size=10), st.lists(st.integers(), max_size=3)
    ),
)
def test_property_str_parses_back(left: str, op: Op, right: Any) -> None:
    condition = Condition(left, op, None if op in UNARY else right)
    assert Condition.parse(str(condition)) == condition
