"""The words progress.md is read by: its statuses, the sections it interprets, a gate's line.

Plain Python (no pydantic), shared by the models of :mod:`harness.memory.progress_items` and by
what reads a progress file without them (``harness status``, :mod:`harness.memory.progress_format`).
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import NamedTuple

from harness.core.text import one_line
from harness.memory.sections import heading_key

SECTIONS = {"checklist": "checklist", "tasks": "checklist", "to do": "checklist"}
SECTIONS |= {"attempts": "attempts", "history": "attempts", "notes": "notes"}
"""The section headings progress.md interprets (folded by ``heading_key``) and their fields."""
RUN_HEADING = "Run"
"""The section where a run's work lives (:mod:`harness.memory.run_state`)."""
RESTORED_LABEL = "Restored"
"""Its line naming the round ``harness restore`` last put on the run branch."""
PROTECTED_CHANGED = "failed: protected files changed"
"""An attempt's outcome when its round changed a protected file (whatever its gates said)."""
_GATE = re.compile(r"^(?P<name>.+?)\s+[—–-]+\s+(?P<state>passed|failed)(?:\s+\((?P<detail>.*)\))?$")


class Status(StrEnum):
    """Where a goal stands."""

    NOT_STARTED = "not started"
    IN_PROGRESS = "in progress"
    PASSED = "passed"
    ESCALATED = "escalated"


def restored_round(line: str) -> int | None:
    """The round a Run section's ``Restored: N`` line names; None for any other line."""
    label, _, value = line.partition(":")
    if heading_key(label) == heading_key(RESTORED_LABEL) and value.strip().isdigit():
        return int(value)
    return None


def critic_mark(score: float) -> float:
    """A critic's score as progress.md keeps it: to hundredths."""
    return round(score, 2)


class GateLine(NamedTuple):
    """What a gate line of an attempt says: ``pytest — failed (tests/test_x.py::test_a)``."""

    name: str
    passed: bool
    detail: str


def gate_line(text: str) -> GateLine | None:
    """The gate result ``text`` states, or ``None`` for free text."""
    match = _GATE.match(one_line(text))
    if not match:
        return None
    return GateLine(match["name"], match["state"] == "passed", match["detail"] or "")
