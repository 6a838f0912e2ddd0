"""Fixtures for the sandbox tests: the bwrap backend, skipped with the reason where it cannot run."""

from __future__ import annotations

import pytest

from harness.sandbox.bwrap import bwrap_problem


@pytest.fixture
def bwrap_ok() -> None:
    problem = bwrap_problem()
    if problem:
        pytest.skip(problem)
