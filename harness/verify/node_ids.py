"""Test ids cut at their first space, as SWE-bench's published files hold them, matched the way
its official grader matches them.

The official log parser reads a test id up to its first space, so a published id of a test whose
parameters hold one is cut (``t.py::test_x[$A$`` for ``t.py::test_x[$A$ foo]``) and names no
pytest node. The official grader finds it among the ids it parsed, which are cut the same way,
and, failing that, takes an id with more ``[`` than ``]`` as a prefix of the parsed ids. A cut
id here stands for the collected tests it would have matched there:

1. the collected id equal to it;
2. else the collected ids that, cut at their first space, equal it;
3. else, when it has more ``[`` than ``]``, the collected ids it is a prefix of (cut likewise).

It passes when every test it stands for passes: several tests agreeing count as one, and tests
that disagree fail it, as the official grader has it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.verify.pytest_args import positional_paths, positions


def is_cut(test_id: str) -> bool:
    """Whether a pytest node id may have been cut inside its parameters (a ``[`` left open)."""
    return "::" in test_id and test_id.count("[") > test_id.count("]")


def matches(test_id: str, collected: Sequence[str]) -> list[str]:
    """The collected ids ``test_id`` stands for, by the rules above; [] for none."""
    if test_id in collected:
        return [test_id]
    cut = [found for found in collected if _cut(found) == test_id]
    if cut or not is_cut(test_id):
        return cut
    return [found for found in collected if _cut(found).startswith(test_id)]


def collection_args(args: list[str]) -> list[str] | None:
    """What to collect to resolve the cut ids in pytest ``args``: its options and the files of
    its positional arguments; None when no id is cut (nothing to collect)."""
    where = positions(args)
    if not any(is_cut(args[index]) for index in where):
        return None
    positional = set(where)
    options = [arg for index, arg in enumerate(args) if index not in positional]
    return [*options, *positional_paths(args)]


@dataclass(frozen=True)
class Resolved:
    """Arguments with each cut id replaced by the ids it stands for; the ids that name none."""

    args: list[str]
    unmatched: list[str]


def resolve(args: list[str], collected: Sequence[str]) -> Resolved:
    """Pytest ``args`` with every node id among its positional arguments replaced by the
    collected tests it stands for, each test named once."""
    resolved: list[str] = []
    unmatched: list[str] = []
    named: set[str] = set()
    where = set(positions(args))
    for index, arg in enumerate(args):
        if index not in where or "::" not in arg:
            resolved.append(arg)
            continue
        found = matches(arg, collected)
        if not found:
            unmatched.append(arg)
        resolved.extend(test for test in found if test not in named)
        named.update(found)
    return Resolved(resolved, unmatched)


def _cut(test_id: str) -> str:
    """The id as the official parser reads it: up to its first whitespace."""
    parts = test_id.split(maxsplit=1)
    return parts[0] if parts else test_id
