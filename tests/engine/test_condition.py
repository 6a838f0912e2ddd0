"""Exit conditions: operators, parsing, paths, missing values, AND/OR sets."""

from __future__ import annotations

import dataclasses
import operator
from dataclasses import dataclass
from typing import Any, NamedTuple

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.core.errors import ConfigError
from harness.engine.condition import Condition, ConditionSet, Op
from harness.engine.operators import UNARY
from harness.engine.reference import MISSING, as_text, lookup


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


@pytest.mark.parametrize("op", list(Op))
def test_a_path_under_a_missing_output_is_missing_not_none(op: Op) -> None:
    right = None if op in UNARY else 1
    assert lookup(scope(), ["result", "checks", "0"]) is MISSING
    assert not Condition("result.checks.0", op, right).holds(scope())
    assert not Condition("result.checks", op, right).holds(scope(result=None))


def test_a_string_or_number_has_no_parts() -> None:
    root = scope(name="abc", n=12, raw=b"xyz", flag=True)
    for path in (["name", "0"], ["n", "0"], ["raw", "0"], ["flag", "real"], ["name", "upper"]):
        assert lookup(root, path) is MISSING, path
    assert not Condition("name.0", "==", "a").holds(root)
    assert not Condition("name.0", "is_not_empty").holds(root)


def test_paths_step_by_key_index_and_public_non_callable_attribute() -> None:
    root = scope(data={"0": "key zero", "list": ["a", "b"]}, pair=("x", "y"), verdict=Verdict(7))
    assert lookup(root, ["data", "0"]) == "key zero"  # a mapping is stepped into by key
    assert lookup(root, ["data", "list", "1"]) == "b"
    assert lookup(root, ["data", "list", "-1"]) == "b"
    assert lookup(root, ["pair", "0"]) == "x"
    assert lookup(root, ["verdict", "score"]) == 7
    assert lookup(root, ["verdict", "__class__"]) is MISSING
    assert lookup(root, ["data", "missing", "deeper"]) is MISSING
    assert lookup(scope(none=None), ["none", "x"]) is MISSING
    assert lookup(scope(d={"k": None}), ["d", "k"]) is None


@pytest.mark.parametrize(
    ("value", "op", "right"),
    [("abc", "<", [1]), ([1], "<", "abc"), ("abc", ">=", {"a": 1}), (None, ">", 1),
     (1, "<=", [1]), (True, ">", 0), (1, "<", False), ({"a": 1}, ">", {"a": 0})],
)  # fmt: skip
def test_ordering_unlike_values_does_not_hold_and_does_not_raise(
    value: Any, op: str, right: Any
) -> None:
    assert Condition("x", op, right).holds(scope(x=value)) is False


@pytest.mark.parametrize(
    ("value", "op", "right", "expected"),
    [
        (8, "==", "8", True),
        (8, "<", "9", True),
        (8, ">", "9", False),
        ("8.5", ">", 8, True),
        ("eight", "!=", 8, True),
        (8, "==", "eight", False),
        (0, "==", False, False),
        (1, "!=", True, True),
        ("True", "==", True, False),
        ("ABC", "<", "abd", True),
        ({"a": 1}, "==", {"a": 1}, True),
        ([1, "2"], "==", [1, 2], False),
        ({"Key": 1}, "contains", "Key", True),
        ({"Key": 1}, "contains", 1, False),
        ("score: 10", "contains", 10, True),
        ('["é"]', "contains", ["é"], True),
        ([True], "contains", 1, False),
        ([{"a": 1}], "contains", {"a": 1}, True),
        ("ends.md", "ends_with", "md", True),
        ("ends.md", "ends_with", "ends", False),
        ("10 apples", "starts_with", 10, True),
        (5, "ends_with", 5, False),
        (0, "is_not_empty", None, True),
        (False, "is_empty", None, False),
        ([0], "is_empty", None, False),
        ({"": None}, "is_empty", None, False),
        (" ", "is_empty", None, False),
    ],
)
def test_operator_edge_cases(value: Any, op: str, right: Any, expected: bool) -> None:
    assert Condition("x", op, right).holds(scope(x=value)) is expected


def test_case_folding_applies_to_strings_only_and_to_both_sides() -> None:
    root = scope(x="Straße", n=5, items=["Done"], d={"KEY": 1})
    assert Condition("x", "==", "STRASSE", case_sensitive=False).holds(root)
    assert Condition("x", "starts_with", "STR", case_sensitive=False).holds(root)
    assert not Condition("x", "starts_with", "STR").holds(root)
    assert not Condition("x", "ends_with", "E").holds(root)
    assert Condition("x", "not_contains", "SS", case_sensitive=False).holds(root) is False
    assert Condition("x", "not_contains", "SS").holds(root) is True
    assert Condition("n", "==", 5, case_sensitive=False).holds(root)
    assert Condition("items", "contains", "done", case_sensitive=False).holds(root)
    assert not Condition("items", "contains", "done").holds(root)
    assert Condition("d", "contains", "key", case_sensitive=False).holds(root)
    assert not Condition("x", ">", "strasse", case_sensitive=False).holds(root)


@pytest.mark.parametrize(
    ("text", "right"),
    [("x == TRUE", True), ("x == False", False), ("x == ''", ""), ("x == '", "'"),
     ("x == 'a'b'", "a'b"), ("x == \"q\"", "q"), ("x == 1e3", 1000.0), ("x == [1, 2]", [1, 2]),
     ("x == null", None), ("x ==", None), ("x == some words", "some words"),
     ("x == 'abc", "'abc"), ("x == abc'", "abc'")],
)  # fmt: skip
def test_parse_reads_values_as_json_then_quoted_then_plain_text(text: str, right: Any) -> None:
    parsed = Condition.parse(text)
    assert parsed.right == right
    assert type(parsed.right) is type(right)


def test_parse_keeps_case_sensitivity_and_normalises_operator_spelling() -> None:
    parsed = Condition.parse("title NOT   Contains draft", case_sensitive=False)
    assert parsed == Condition("title", Op.NOT_CONTAINS, "draft", case_sensitive=False)
    assert parsed.case_sensitive is False
    assert Condition.parse("x is NOT empty").op is Op.IS_NOT_EMPTY


def test_operand_rules_per_operator() -> None:
    assert Condition("x", "==").right is None
    assert Condition("x", "!=", None).holds(scope(x=0))
    for op in (">", ">=", "<", "<=", "contains", "not contains", "starts with", "ends with"):
        with pytest.raises(ConfigError, match="needs a right-hand value"):
            Condition("x", op)
    for op in ("is empty", "is_not_empty"):
        with pytest.raises(ConfigError, match="takes no right-hand value"):
            Condition("x", op, 0)


def test_str_of_each_kind_of_condition() -> None:
    assert str(Condition("x", "is empty")) == "x is_empty"
    assert str(Condition("a.b", "not contains", "é")) == 'a.b not_contains "é"'
    assert str(Condition("x", ">=", 8)) == "x >= 8"
    assert str(Condition("x", "==")) == "x == null"
    assert str(ConditionSet.parse("a > 1 or b < 2")) == "a > 1 or b < 2"


def test_condition_sets_of_three_split_at_each_connective() -> None:
    parsed = ConditionSet.parse("a > 1 AND b == 'x and y' and c is empty")
    assert parsed == ConditionSet(
        (Condition("a", ">", 1), Condition("b", "==", "x and y"), Condition("c", "is_empty")),
        "and",
    )
    either = ConditionSet.parse("a > 1 or b > 1 or c > 1", "until")
    assert either.combine == "or"
    assert [either.holds(scope(a=a, b=b, c=c)) for a, b, c in ((0, 0, 0), (0, 0, 2))] == [
        False, True,
    ]  # fmt: skip
    one = ConditionSet.parse("a > 1")
    assert one == ConditionSet((Condition("a", ">", 1),), "and")


def test_condition_set_build_reads_strings_and_keeps_and_by_default() -> None:
    assert ConditionSet.build("a > 1 or b > 2", "and", "until") == ConditionSet.parse(
        "a > 1 or b > 2"
    )
    built = ConditionSet.build(["a > 1", "b > 2"], "and", "until")
    assert built is not None
    assert built.combine == "and"
    assert not built.holds(scope(a=2, b=0))
    assert built.holds(scope(a=2, b=3))
    with pytest.raises(ConfigError, match="^combine: must be 'and' or 'or', got 'AND'$"):
        ConditionSet.build(None, "AND", "until")


def test_an_empty_and_set_holds_and_an_empty_or_set_does_not() -> None:
    assert ConditionSet((), "and").holds(scope())
    assert not ConditionSet((), "or").holds(scope())


def test_as_text_reads_values_as_a_template_shows_them() -> None:
    assert as_text("plain") == "plain"
    assert as_text(None) == ""
    assert as_text(8) == "8"
    assert as_text({"name": "é", "n": [1, True]}) == '{"name": "é", "n": [1, true]}'
    assert as_text(Verdict(7)) == '"Verdict(score=7, _secret=1)"'  # JSON of its str()


def test_missing_shows_as_missing() -> None:
    assert repr(MISSING) == "MISSING"
    assert lookup(scope(), ["x"]) is MISSING


def test_a_condition_is_frozen() -> None:
    condition = Condition("x", ">=", 8)
    with pytest.raises(ValueError, match="frozen"):
        condition.right = 9  # type: ignore[misc]
    assert condition.right == 8
    assert hash(condition) == hash(Condition("x", ">=", 8))


def test_a_number_beside_a_non_numeric_value_is_not_equal_and_does_not_raise() -> None:
    root = scope(n=8, items=[8])
    assert not Condition("n", "==", [8]).holds(root)
    assert Condition("n", "!=", {"a": 8}).holds(root)
    assert not Condition("items", "==", 8).holds(root)
    assert not Condition("n", "<", [9]).holds(root)


class Scored(NamedTuple):
    score: float
    notes: list[str]


def test_a_named_tuples_fields_are_read_by_name_and_by_index() -> None:
    root = scope(result=Scored(9.0, ["ok"]), items=["a"])
    assert lookup(root, ["result", "score"]) == 9.0
    assert lookup(root, ["result", "0"]) == 9.0
    assert lookup(root, ["result", "notes", "0"]) == "ok"
    assert Condition("result.score", ">=", 8).holds(root)
    assert lookup(root, ["result", "count"]) is MISSING  # a method, not a field
    assert lookup(root, ["result", "5"]) is MISSING
    assert lookup(root, ["items", "append"]) is MISSING
    assert lookup(root, ["items", "first"]) is MISSING


def test_a_condition_set_is_frozen() -> None:
    conditions = ConditionSet.parse("a > 1 and b > 2")
    with pytest.raises(dataclasses.FrozenInstanceError):
        conditions.combine = "or"  # type: ignore[misc]
    assert conditions.combine == "and"
