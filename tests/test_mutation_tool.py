"""bench/mutation.py: the mutants it makes are the ones it names, and every one compiles."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_mutation", ROOT / "bench" / "mutation.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


mutation = _tool()

SOURCE = '''"""Doc."""
import os
LIMITS = (1, "two")
FLAGS = frozenset({"a", "b"})


def f(x, items):
    """Doc."""
    if x < 3 and not items:
        return x
    y = x in items
    return y is None or True
'''


def test_each_operator_yields_its_mutants_in_order() -> None:
    found = [(m.line, m.description) for m in mutation.mutants(SOURCE)]
    assert found == [
        (3, "drop element 0 (1)"),
        (3, "drop element 1 ('two')"),
        (4, "drop element 0 ('a')"),
        (4, "drop element 1 ('b')"),
        (9, "delete statement"),
        (11, "delete statement"),
        (12, "return None"),
        (12, "delete statement"),
        (3, "1 -> 2"),
        (3, "1 -> 0"),
        (9, "and -> or"),
        (10, "return None"),
        (10, "delete statement"),
        (11, "0:in -> not in"),
        (12, "or -> and"),
        (9, "0:< -> <="),
        (9, "0:< -> >="),
        (9, "drop 'not'"),
        (12, "0:is -> is not"),
        (12, "True -> False"),
        (9, "3 -> 4"),
        (9, "3 -> 2"),
    ]


def test_applying_a_mutant_changes_exactly_what_it_names() -> None:
    by_name = {m.description: m for m in mutation.mutants(SOURCE)}
    original = ast.unparse(ast.parse(SOURCE))

    def changed(description: str) -> list[tuple[str, str]]:
        mutated = mutation.apply(SOURCE, by_name[description]).splitlines()
        return [(a, b) for a, b in zip(original.splitlines(), mutated, strict=True) if a != b]

    assert changed("0:< -> >=") == [
        ("    if x < 3 and (not items):", "    if x >= 3 and (not items):")
    ]
    assert changed("drop 'not'") == [("    if x < 3 and (not items):", "    if x < 3 and items:")]
    assert changed("drop element 1 ('b')") == [
        ("FLAGS = frozenset({'a', 'b'})", "FLAGS = frozenset({'a'})")
    ]
    assert changed("True -> False") == [
        ("    return y is None or True", "    return y is None or False")
    ]
    assert changed("3 -> 2") == [("    if x < 3 and (not items):", "    if x < 2 and (not items):")]


@pytest.mark.parametrize("key", sorted(mutation.MODULES))
def test_mutants_of_every_measured_module_compile(key: str) -> None:
    module, tests = mutation.MODULES[key]
    assert all((ROOT / test).is_file() for test in tests)
    source = (ROOT / module).read_text()
    found = mutation.mutants(source)
    assert len(found) > 10
    scoped = mutation.mutants(source, mutation.SCOPES.get(key, ()))
    assert 10 < len(scoped) <= len(found)
    assert set(scoped) <= set(found)  # a scope only leaves mutants out
    unparsed = ast.unparse(ast.parse(source))
    for mutant in found[::7]:  # a sample: parsing and unparsing each one is slow
        mutated = mutation.apply(source, mutant)
        assert mutated != unparsed, mutant
        compile(mutated, module, "exec")


def test_a_scope_mutates_only_the_functions_it_names() -> None:
    source = (
        "def a(x):\n    return x < 1\n\n\nclass B:\n    def c(self, y):\n        return y == 2\n"
    )
    assert {m.line for m in mutation.mutants(source, ("B.c",))} == {7}
    assert {m.line for m in mutation.mutants(source, ("a",))} == {2}
    assert {m.line for m in mutation.mutants(source, ("B",))} == {7}
    assert {m.line for m in mutation.mutants(source)} == {2, 7}
    assert mutation.mutants(source, ("c",)) == []  # a method is named with its class
    assert set(mutation.SCOPES) <= set(mutation.MODULES)


def test_a_decimal_constant_moves_by_one_or_below_one_doubles_and_halves() -> None:
    source = "LIMIT = 4.0\nSHARE = 0.25\n\n\ndef f(x):\n    return x * 0.0\n"
    found = [(m.line, m.description) for m in mutation.mutants(source)]
    assert found == [
        (1, "4.0 -> 5.0"),
        (1, "4.0 -> 3.0"),
        (2, "0.25 -> 0.5"),
        (2, "0.25 -> 0.125"),
        (6, "return None"),
        (6, "delete statement"),
        (6, "0.0 -> 1.0"),
        (6, "0.0 -> -1.0"),
    ]
    by_name = {m.description: m for m in mutation.mutants(source)}
    assert mutation.apply(source, by_name["4.0 -> 3.0"]).splitlines()[0] == "LIMIT = 3.0"
    assert mutation.apply(source, by_name["0.25 -> 0.125"]).splitlines()[1] == "SHARE = 0.125"


def test_a_scope_can_name_a_module_level_constant() -> None:
    source = "LIMIT = 1_200\nOTHER: int = 7\n\n\ndef f(x):\n    return x < LIMIT\n"
    assert {m.description for m in mutation.mutants(source, ("LIMIT",))} == {
        "1200 -> 1201",
        "1200 -> 1199",
    }
    assert {m.line for m in mutation.mutants(source, ("OTHER",))} == {2}
    assert {m.line for m in mutation.mutants(source, ("f",))} == {6}
