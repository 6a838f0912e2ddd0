"""Attempts vote with their reproduction tests: a fix that passes more of the others' tests ranks
higher.

With ``--attempts N`` and a reproduction gate, an attempt whose last round passed that gate wrote
tests that fail at the base and pass on its own fix. Each of them is run, with the gate's pytest
in the sandbox, on every other passing attempt's commit (a clean checkout of it, the voter's
test files laid over it). A candidate's :class:`Tally` is how many of the other attempts'
reproduction tests it passes, of how many there are: a fix that only fits its own test fails
the tests the others wrote for the same bug; the right fix passes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.outer.change import tree_change
from harness.verify.reproduction import ReproductionGate
from harness.workspace.checkout import clean_checkout
from harness.workspace.cleanup import top_of


@dataclass(frozen=True)
class Tally:
    """How many of the other attempts' reproduction tests a candidate passes, of how many."""

    passed: int
    of: int

    @property
    def share(self) -> float:
        return self.passed / self.of if self.of else 0.0

    def __str__(self) -> str:
        return f"{self.passed} of {self.of}"


def cast_votes(
    voters: Mapping[int, str],
    candidates: Mapping[int, str],
    *,
    gate: ReproductionGate,
    workspace: Path,
    base: str,
) -> dict[int, Tally]:
    """Each candidate's tally (by attempt number), from the tests of the ``voters`` (attempt
    number to the commit of its last round); a candidate no other attempt's test judged has
    none. ``workspace`` is where the attempts worked, ``base`` the commit they started from."""
    root = top_of(workspace)
    if root is None:
        return {}
    passed = dict.fromkeys(candidates, 0)
    judged = dict.fromkeys(candidates, 0)
    for voter, commit in voters.items():
        change = tree_change(root, workspace, base=base, tree=commit)
        with clean_checkout(root, workspace, base=base, protect=(), commit=commit) as written:
            tests = gate.written_tests(written, change)
            for number, other in candidates.items():
                if number == voter or not tests:
                    continue
                with clean_checkout(root, workspace, base=base, protect=(), commit=other) as at:
                    passed[number] += len(gate.passing(at, written, change, tests))
                judged[number] += len(tests)
    return {
        number: Tally(passed[number], judged[number]) for number in candidates if judged[number]
    }
