"""The reference grammar shared by conditions, templates and ForEach items."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness import ConfigError, Loop
from harness.engine.loop import LoopContext
from harness.engine.reference import MISSING, parse_reference, resolve


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("score", ("score",)),
        ("$loop.index", ("loop", "index")),
        ("output.result.score", ("output", "result", "score")),
        ("items.0.name", ("items", "0", "name")),
        ("history[-1].output.z", ("history", "-1", "output", "z")),
        ("grid[0][12]", ("grid", "0", "12")),
        ("_private", ("_private",)),
    ],
)
def test_references_parse_into_parts(text: str, parts: tuple[str, ...]) -> None:
    assert parse_reference(text) == parts


@pytest.mark.parametrize(
    ("text", "position", "found", "problem"),
    [
        ("", 0, "the end", "expected a name (a letter or '_' first)"),
        ("$", 1, "the end", "expected a name"),
        ("1abc", 0, "'1'", "expected a name"),
        ("a.", 2, "the end", "expected a key or an index after '.'"),
        ("a..b", 2, "'.'", "expected a key or an index after '.'"),
        ("a[x]", 1, "'['", "expected '[' integer ']', e.g. [0] or [-1]"),
        ("a[1", 1, "'['", "expected '[' integer ']'"),
        ("a[]", 1, "'['", "expected '[' integer ']'"),
        ("a b", 1, "' '", "expected '.' or '[' or the end"),
        ("a-b", 1, "'-'", "expected '.' or '[' or the end"),
        ("a]", 1, "']'", "expected '.' or '[' or the end"),
    ],
)
def test_errors_name_the_reference_and_the_position(
    text: str, position: int, found: str, problem: str
) -> None:
    expected = f"reference {text!r}: at position {position} ({found}): {problem}"
    with pytest.raises(ConfigError, match=re.escape(expected)):
        parse_reference(text)


@dataclass
class Record:
    output: Any
    _hidden: int = 1

    def method(self) -> int:
        return 1


ROOTS = {
    "history": [Record({"z": 1}), Record({"z": 2})],
    "items": [{"name": "a"}],
    "flag": True,
}


def root(name: str) -> Any:
    return ROOTS.get(name, MISSING)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("history[-1].output.z", 2),
        ("history[0].output.z", 1),
        ("history.1.output.z", 2),
        ("history[-3]", MISSING),
        ("history[2]", MISSING),
        ("history[0]._hidden", MISSING),
        ("history[0].method", MISSING),
        ("items[0].name", "a"),
        ("items[0].name.more", MISSING),
        ("flag.deeper", MISSING),
        ("absent.x", MISSING),
    ],
)
def test_resolve_steps_into_keys_indices_and_attributes(text: str, value: Any) -> None:
    found = resolve(root, text)
    assert found is MISSING if value is MISSING else found == value


def test_templates_use_the_same_grammar() -> None:
    def body(ctx: LoopContext) -> str:
        return ctx.render("{{ $loop.index }}: {{input[-1]}} {{notes[0]}} {{ 'a': 1 }}")

    loop = Loop(body, variables={"notes": ["n0"]}, until="", max_iterations=2, feedback=False)
    assert loop.run(["first", "last"]).history[0].output == "0: last n0 {{ 'a': 1 }}"
    with pytest.raises(ConfigError, match=r"template placeholder '\{\{notes\[5\]\}\}'"):
        Loop(lambda ctx: ctx.render("{{notes[5]}}"), variables={"notes": []}).run()


@given(
    names=st.lists(st.from_regex(r"[A-Za-z_]\w{0,5}", fullmatch=True), min_size=1, max_size=4),
    indices=st.lists(st.integers(-9, 9), max_size=3),
)
def test_property_well_formed_references_parse_to_their_parts(
    names: list[str], indices: list[int]
) -> None:
    text = ".".join(names) + "".join(f"[{i}]" for i in indices)
    assert parse_reference(text) == (*names, *map(str, indices))
    assert parse_reference(f"${text}") == parse_reference(text)


@pytest.mark.parametrize("value", [5, None, ("history",)])
def test_a_reference_that_is_not_text_is_a_configuration_error(value: Any) -> None:
    with pytest.raises(ConfigError) as error:
        parse_reference(value)
    assert str(error.value) == f"reference: expected text, got {type(value).__name__}"
