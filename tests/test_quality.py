"""The code base stays lint-clean and type-checks; CI runs these like any other test."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing() -> None:
    result = _run(sys.executable, "-m", "ruff", "check", "harness", "tests", "bench", "examples")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_finds_nothing_in_the_package() -> None:
    pytest.importorskip("mypy", reason="mypy comes with the dev extra")
    result = _run(sys.executable, "-m", "mypy", "harness")
    assert result.returncode == 0, result.stdout + result.stderr
