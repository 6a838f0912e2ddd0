"""The reproduction gate on real bugs: three cases of the real-project matrix, each with its
upstream test removed from the repository, through ``harness run`` as a user runs it.

A scripted agent fixes the code and then, round by round, does what agents do: round 1 fixes the
code without a test (the gate: no reproduction test), round 2 adds a test that passes at the
base (the gate: it does not reproduce), round 3 puts the upstream test back (it fails at the
base and passes on the fix: the round passes).
"""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import pytest

from harness import Agent, BestOf, OuterLoop, ScriptedModel, ToolCall
from harness.cli.attempts import attempts_summary
from harness.scale.best_of import pick_winner, why_it_won
from harness.verify.reproduction import ReproductionGate
from tests.cli.test_examples import of_kind, read_events
from tests.conftest import git
from tests.realworld.test_matrix import checkout, load, run, write_fix

pytestmark = pytest.mark.slow

CASES = ["boltons", "six", "tomli"]
PASSES_AT_BASE = "\n\ndef test_issue():\n    assert 1 + 1 == 2\n"


def without(text: str, name: str) -> str:
    """``text`` without the top-level function ``name`` (its decorators too)."""
    tree = ast.parse(text)
    (node,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    lines = text.splitlines(keepends=True)
    assert node.end_lineno is not None
    return "".join(lines[: first - 1] + lines[node.end_lineno :]).rstrip("\n") + "\n"


def written(path: str, content: str) -> dict[str, object]:
    return {"name": "write_file", "arguments": {"path": path, "content": content}}


def submit(summary: str) -> dict[str, object]:
    return {"name": "submit", "arguments": {"summary": summary}}


def reproduction_project(name: str, tmp_path: Path) -> tuple[Path, str, str, str]:
    """The case's base with its upstream test removed and a loop of one reproduction gate; the
    test's file, its text with the test and without it."""
    case = load(name)
    project = checkout(name, case, tmp_path)
    test_file, _, test_name = case.tests[0].partition("::")
    upstream = (project / test_file).read_text()
    removed = without(upstream, test_name)
    (project / test_file).write_text(removed)
    toml = (project / "loop.toml").read_text()
    gate = f'[[gates]]\ntype = "pytest"\nargs = {json.dumps(" ".join(case.tests))}\n'
    assert gate in toml
    toml = toml.replace(gate, '[[gates]]\ntype = "reproduction"\n')
    toml = toml.replace("max_iterations = 1", "max_iterations = 3")
    toml = toml.replace(f"The test {case.tests[0]} fails.", f"{case.subject}: a bug.")
    (project / "loop.toml").write_text(toml)
    git(project, "commit", "-qam", "the upstream test removed")
    return project, test_file, upstream, removed


@pytest.mark.parametrize("name", CASES)
def test_no_test_then_a_test_that_passes_at_base_fail_and_the_upstream_test_passes(
    tmp_path: Path, name: str
) -> None:
    case = load(name)
    project, test_file, upstream, removed = reproduction_project(name, tmp_path)
    fix = write_fix(name, case)[:-1]
    rounds: dict[str, list[object]] = {
        "1": [*fix, submit("fixed, no test")],
        "2": [written(test_file, removed + PASSES_AT_BASE), submit("a test")],
        "3": [written(test_file, upstream), submit("the test that shows the bug")],
    }

    result = run(project, rounds, tmp_path)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "PASSED: round 3" in result.stdout
    reports = of_kind(read_events(project), "gate_report")
    assert [(r["round"], r["passed"], r["summary"]) for r in reports] == [
        (1, False, "no reproduction test: the round adds no test"),
        (2, False, "reproduction: does not reproduce: "
                   f"{test_file}::test_issue passes at the base commit"),
        (3, True, f"reproduction: 1 test fail at the base commit and pass now: {case.tests[0]}"),
    ]  # fmt: skip


BOUND = "        if val > 2 ** len_:\n"
FIXES = {
    "right": "        if val >= 2 ** len_:\n",
    "too strict": "        if val > 2 ** len_ - 2:\n",
    "not for short lengths": "        if val >= 2 ** len_ and len_ > 1:\n",
}
RAISES = "from pytest import raises\nfrom boltons.mathutils import Bits\n\n\n"
FOUR = (
    RAISES + "def test_four_needs_three_bits():\n    with raises(ValueError):\n        Bits(4, 2)\n"
)
EIGHT = (
    RAISES + "def test_eight_needs_four_bits():\n    with raises(ValueError):\n        Bits(8, 3)\n"
)
SMALL = RAISES + (
    "def test_one_bit_holds_one():\n    with raises(ValueError):\n        Bits(2, 1)\n"
    '    assert Bits(1, 1).as_bin() == "1"\n'
)


def test_among_four_attempts_the_reproduction_tests_vote_for_the_right_fix(tmp_path: Path) -> None:
    case = load("boltons")
    project, test_file, upstream, _ = reproduction_project("boltons", tmp_path)
    source = (project / "boltons" / "mathutils.py").read_text()
    assert source.count(BOUND) == 1
    plan = {  # attempt: its fix and the test it writes (each passes its own gate)
        1: ("too strict", "tests/test_bits_four.py", FOUR),
        2: ("not for short lengths", "tests/test_bits_eight.py", EIGHT),
        3: ("right", test_file, upstream),
        4: ("right", "tests/test_bits_small.py", SMALL),
    }

    def loop_for(number: int) -> OuterLoop:
        fix, path, test = plan[number]
        author = ScriptedModel([
            [ToolCall("write_file", {"path": "boltons/mathutils.py",
                                     "content": source.replace(BOUND, FIXES[fix])}),
             ToolCall("write_file", {"path": path, "content": test})],
            f"the {fix} fix",
        ])  # fmt: skip
        return OuterLoop(
            case.subject, Agent(author), gates=[ReproductionGate()], workspace=project,
            progress=tmp_path / "progress" / f"bits-{number}.md", max_iterations=1,
            name=f"bits-{number}",
        )  # fmt: skip

    result = BestOf(loop_for, attempts=4, workspace=project, reproduction=ReproductionGate()).run()

    assert [a.passed for a in result.attempts] == [True] * 4  # each fix passes its own test
    assert [(a.votes.passed, a.votes.of) for a in result.attempts if a.votes] == [
        (1, 3), (1, 3), (3, 3), (3, 3)
    ]  # fmt: skip
    assert result.winner is not None
    assert result.winner.number == 4  # 3 and 4 tie on the vote: the fewest tokens win
    assert result.winner.result is not None
    branch = result.winner.result.branch
    assert git(project, "show", f"{branch}:boltons/mathutils.py") == source.replace(
        BOUND, FIXES["right"]
    ).rstrip("\n")
    assert why_it_won(result.attempts, result.winner) == (
        f"tied on votes 3 of 3, no score with attempt 3; the fewest tokens "
        f"({result.winner.tokens:,})"
    )
    unvoted = [dataclasses.replace(a, votes=None) for a in result.attempts]
    fewest = pick_winner(unvoted)  # without the vote the fewest tokens win: a wrong fix
    assert fewest is not None
    assert fewest.number == 1
    lone = [a for a in result.attempts if a.number != 4]
    assert why_it_won(lone, lone[2]) == (
        "it passes the most of the other attempts' reproduction tests (3 of 3)"
    )
    summary = attempts_summary(result, wall_seconds=1.0)
    assert [(t.name, t.others_tests_passed, t.others_tests) for t in summary.tasks] == [
        ("attempt-1", 1, 3), ("attempt-2", 1, 3), ("attempt-3", 3, 3), ("attempt-4", 3, 3)
    ]  # fmt: skip
