"""Test ids cut at their first space, as SWE-bench's published files hold them, matched the way
its official grader matches them: by the pure rules, and through a real pytest gate."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.sandbox import Sandbox
from harness.verify.held_out import HeldOutGate
from harness.verify.node_ids import collection_args, is_cut, matches, resolve
from harness.verify.pytest_gate import PytestGate

T = "tests/test_sql.py"
COLLECTED = [
    f"{T}::test_dollar[$A$ foo $B$-False]",
    f"{T}::test_dollar[$A$ bar-True]",
    f"{T}::test_dollar[$Abc$-True]",
    f"{T}::test_placeholder[select * from a-x]",
    f"{T}::test_placeholder[select 1-y]",
    f"{T}::test_plain",
    f"{T}::test_plainer",
]


def test_an_id_cut_inside_its_parameters_is_cut_and_a_whole_one_is_not() -> None:
    assert is_cut(f"{T}::test_dollar[$A$")
    assert not is_cut(f"{T}::test_dollar[$A$ foo $B$-False]")
    assert not is_cut(f"{T}::test_plain")
    assert not is_cut("tests/odd[dir/test_x.py")  # a path, not a node id


def test_a_whole_id_stands_for_itself_only() -> None:
    whole = f"{T}::test_dollar[$A$ foo $B$-False]"
    assert matches(whole, COLLECTED) == [whole]
    assert matches(f"{T}::test_plain", COLLECTED) == [f"{T}::test_plain"]


def test_a_cut_id_stands_for_the_ids_cut_the_same_way_not_those_it_merely_begins() -> None:
    # the official parser cuts the log's ids too: test_dollar[$Abc$-True] is a key of its own
    assert matches(f"{T}::test_dollar[$A$", COLLECTED) == [
        f"{T}::test_dollar[$A$ foo $B$-False]",
        f"{T}::test_dollar[$A$ bar-True]",
    ]
    assert matches(f"{T}::test_placeholder[select", COLLECTED) == [
        f"{T}::test_placeholder[select * from a-x]",
        f"{T}::test_placeholder[select 1-y]",
    ]


def test_an_id_cut_elsewhere_is_a_prefix_and_only_with_a_bracket_left_open() -> None:
    assert matches(f"{T}::test_dollar[$Ab", COLLECTED) == [f"{T}::test_dollar[$Abc$-True]"]
    assert matches(f"{T}::test_plai", COLLECTED) == []  # no open bracket: the grader never guesses
    assert matches(f"{T}::test_gone[x", COLLECTED) == []


def test_only_positional_cut_ids_are_resolved_each_test_once() -> None:
    args = ["-k", "test_dollar[$A$", f"{T}::test_dollar[$A$", f"{T}::test_dollar[$A$ bar-True]", T]
    found = resolve(args, COLLECTED)
    assert found.args == [
        "-k", "test_dollar[$A$",  # an option's value is left alone
        f"{T}::test_dollar[$A$ foo $B$-False]", f"{T}::test_dollar[$A$ bar-True]", T,
    ]  # fmt: skip
    assert found.unmatched == []
    assert resolve([f"{T}::test_gone[x", f"{T}::test_plai"], COLLECTED).unmatched == [
        f"{T}::test_gone[x",
        f"{T}::test_plai",
    ]


def test_a_collection_is_needed_only_for_a_cut_id() -> None:
    assert collection_args([f"{T}::test_plain", "-x"]) is None
    assert collection_args(["-x", f"{T}::test_dollar[$A$", f"{T}::test_plain", "b.py"]) == [
        "-x", T, "b.py",
    ]  # fmt: skip


SQL_TESTS = """\
import pytest


@pytest.mark.parametrize("text", ["$A$ foo $B$", "$A$ bar", "$Abc$"])
def test_dollar(text):
    assert text.startswith("$A")


@pytest.mark.parametrize("query", ["select * from a", "select 1"])
def test_placeholder(query):
    assert QUERY_OK or query == "select * from a"


def test_plain():
    pass
"""


def _project(tmp_path: Path, *, ok: bool) -> Path:
    root = tmp_path / "project"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_sql.py").write_text(f"QUERY_OK = {ok}\n{SQL_TESTS}")
    return root


def _gate(*ids: str) -> PytestGate:
    return PytestGate(list(ids), sandbox=Sandbox("none"))


def test_a_cut_id_runs_the_real_tests_it_stands_for(tmp_path: Path) -> None:
    root = _project(tmp_path, ok=True)
    report = _gate(f"{T}::test_dollar[$A$", f"{T}::test_placeholder[select", f"{T}::test_plain")
    checked = report.check(root)
    assert checked.passed, checked.summary
    # $A$ foo $B$ and $A$ bar (not $Abc$), both selects, plain
    assert checked.summary == "pytest: 5 passed of 5 tests"


def test_a_cut_id_fails_when_one_of_the_tests_it_stands_for_fails(tmp_path: Path) -> None:
    root = _project(tmp_path, ok=False)
    checked = _gate(f"{T}::test_placeholder[select").check(root)
    assert not checked.passed
    assert checked.failures == [f"{T}::test_placeholder[select 1]"]


def test_a_cut_id_that_names_no_test_is_reported_by_name(tmp_path: Path) -> None:
    root = _project(tmp_path, ok=True)
    checked = _gate(f"{T}::test_dollar[$A$", f"{T}::test_gone[$A$").check(root)
    assert not checked.passed
    assert checked.summary == f"pytest: no collected test matches {T}::test_gone[$A$"
    assert checked.failures == [f"{T}::test_gone[$A$"]


def test_a_whole_id_with_a_space_runs_as_given(tmp_path: Path) -> None:
    root = _project(tmp_path, ok=False)
    checked = _gate(f"{T}::test_placeholder[select * from a]").check(root)
    assert checked.passed, checked.summary
    assert checked.summary == "pytest: 1 passed of 1 tests"


@pytest.mark.parametrize(("ok", "passed"), [(True, True), (False, False)])
def test_the_held_out_gate_resolves_cut_ids_in_its_copy(
    tmp_path: Path, ok: bool, passed: bool
) -> None:
    """The tests exist only in the held-out files: the ids resolve against the copy."""
    held = _project(tmp_path, ok=ok)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    gate = HeldOutGate(_gate(f"{T}::test_placeholder[select"), held, feedback="ids")
    checked = gate.check(workspace)
    assert checked.passed is passed
    assert checked.failures == ([] if ok else [f"{T}::test_placeholder[select 1]"])


OUTCOMES = {
    f"{T}::test_x[a b]": "PASSED",
    f"{T}::test_x[a c]": "PASSED",
    f"{T}::test_x[ab]": "FAILED",
    f"{T}::test_y[q r]": "PASSED",
    f"{T}::test_y[q s]": "FAILED",
    f"{T}::test_z[long-1]": "PASSED",
    f"{T}::test_z[long-2]": "PASSED",
    f"{T}::test_w[mixed-1]": "PASSED",
    f"{T}::test_w[mixed-2]": "FAILED",
}
ORDER = ("PASSED", "SKIPPED", "XFAIL", "XPASS", "ERROR", "FAILED")
"""The order of ``pytest -rA``'s short summary, which the official parser reads top down."""


@pytest.mark.parametrize(
    ("given", "passes"),
    [
        (f"{T}::test_x[a", True),  # cut at a space: both pass (not test_x[ab], which fails)
        (f"{T}::test_y[q", False),  # cut at a space: one of the two fails
        (f"{T}::test_z[long", True),  # cut elsewhere: a prefix of two that pass
        (f"{T}::test_w[mixed", False),  # cut elsewhere: a prefix of two that disagree
        (f"{T}::test_x[ab]", False),  # whole, failing
        (f"{T}::test_v[gone", False),  # stands for nothing
    ],
)
def test_a_given_id_passes_exactly_when_the_official_grader_says_it_does(
    given: str, passes: bool
) -> None:
    grading = pytest.importorskip("swebench.harness.grading")
    parsers = pytest.importorskip("swebench.harness.log_parsers.python")
    log = "\n".join(
        f"{status} {test}" + (" - assert False" if status == "FAILED" else "")
        for rank in ORDER
        for test, status in OUTCOMES.items()
        if status == rank
    )
    official = grading.test_passed(given, parsers.parse_log_pytest(log, None))

    found = matches(given, list(OUTCOMES))
    ours = bool(found) and all(OUTCOMES[test] == "PASSED" for test in found)

    assert (ours, official) == (passes, passes)
