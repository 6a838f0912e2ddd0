"""A round is one module that hands back an immutable outcome; a run's stop, message and next
feedback are set in one place (``Run.settle``), from the decision the round carries."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from harness.agent.agent import AgentStop
from harness.core.stop import StopReason
from harness.core.usage import Usage
from harness.outer.decision import Decision, RoundReport
from harness.outer.round import RoundOutcome

PACKAGE = Path(__file__).resolve().parents[2] / "harness"
RUN_STATE = {"stop", "message", "feedback", "cut_short", "bad_configuration", "draft", "merged"}


def assignments_to_run_state(tree: ast.AST) -> list[str]:
    """Each ``run.<field> = ...`` (or ``+=``) of a run's round state, as ``line: field``."""
    found = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            elements = target.elts if isinstance(target, ast.Tuple) else [target]
            for element in elements:
                if (
                    isinstance(element, ast.Attribute)
                    and isinstance(element.value, ast.Name)
                    and element.value.id == "run"
                    and element.attr in RUN_STATE
                ):
                    found.append(f"{node.lineno}: {element.attr}")
    return found


def test_no_module_sets_a_runs_stop_message_or_feedback_from_outside() -> None:
    found = {
        str(path.relative_to(PACKAGE)): hits
        for path in sorted(PACKAGE.rglob("*.py"))
        if (hits := assignments_to_run_state(ast.parse(path.read_text())))
    }
    assert found == {}


def test_the_check_finds_an_assignment_from_outside() -> None:
    tree = ast.parse("run.stop, run.message = a, b\nrun.message += 'x'\nrun.feedback = f\n")
    assert assignments_to_run_state(tree) == ["1: stop", "1: message", "2: message", "3: feedback"]
    assert assignments_to_run_state(ast.parse("self.stop = 1\nrun.meter = m\n")) == []


def test_a_round_report_is_made_in_the_round_module_only() -> None:
    makers = sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "RoundReport"
    )
    assert makers == ["outer/round.py"]


def test_a_rounds_outcome_cannot_be_changed_and_says_when_it_was_cut_short() -> None:
    report = RoundReport(
        round=2,
        agent_stop=AgentStop.ANSWERED,
        agent_summary="done",
        steps=3,
        gates=(),
        verdict=None,
        usage=Usage(),
        duration=1.0,
    )
    played = RoundOutcome(2, report, Decision(None, "Round 2 did not pass"))
    stopped = RoundOutcome(3, None, Decision(StopReason.CANCELLED, "cancelled during round 3"))
    assert (played.cut_short, stopped.cut_short) == (False, True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        played.decision = Decision(StopReason.PASSED)  # type: ignore[misc]
