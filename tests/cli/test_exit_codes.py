"""`run_exit_code`: the exit code `harness run` (and `harness replay --live`) gives a run's end."""

from __future__ import annotations

import pytest

from harness.cli.exit_codes import (
    EXIT_ERROR,
    EXIT_ESCALATED,
    EXIT_PASSED,
    EXIT_USAGE,
    run_exit_code,
)
from harness.core.stop import StopReason
from harness.core.usage import Usage
from harness.outer.result import RunResult


def _ended(reason: StopReason, *, bad_configuration: bool = False) -> RunResult:
    return RunResult(reason, "", [], Usage(), bad_configuration=bad_configuration)


@pytest.mark.parametrize(
    ("reason", "code"),
    [
        (StopReason.PASSED, EXIT_PASSED),
        (StopReason.CONDITION_MET, EXIT_PASSED),
        (StopReason.EXIT, EXIT_PASSED),
        (StopReason.ERROR, EXIT_ERROR),
        (StopReason.MAX_ITERATIONS, EXIT_ESCALATED),
        (StopReason.BUDGET_COST, EXIT_ESCALATED),
        (StopReason.NO_PROGRESS, EXIT_ESCALATED),
        (StopReason.CANCELLED, EXIT_ESCALATED),
    ],
)
def test_each_stop_has_its_exit_code(reason: StopReason, code: int) -> None:
    assert run_exit_code(_ended(reason)) == code


def test_an_error_from_bad_configuration_is_a_usage_error_not_an_internal_one() -> None:
    assert run_exit_code(_ended(StopReason.ERROR, bad_configuration=True)) == EXIT_USAGE
    assert run_exit_code(_ended(StopReason.ERROR)) == EXIT_ERROR
    # a pass is a pass whatever else is set
    assert run_exit_code(_ended(StopReason.PASSED, bad_configuration=True)) == EXIT_PASSED
