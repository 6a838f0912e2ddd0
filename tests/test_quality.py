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


def test_the_architecture_map_names_resolve_from_their_modules() -> None:
    """DESIGN's layout: each module named there answers for what it holds."""
    code = (
        "import sys\n"
        "from harness.models import LiteLLMModel, ScriptedModel, ToolCall\n"
        "from harness.memory import Progress, Skill\n"
        "from harness.tools import Tool, default_tools, tool\n"
        "from harness.engine import Condition, ForEach, Loop, LoopResult\n"
        "from harness.outer import OuterLoop, RunResult\n"
        "from harness.verify import CommandGate, Critic, GateReport, PredicateGate, PytestGate, Verdict\n"
        "from harness.agent import Agent, AgentRun\n"
        "from harness.scale import Fleet, Subtask\n"
        "assert 'litellm' not in sys.modules\n"
    )
    result = _run(sys.executable, "-c", code)
    assert result.returncode == 0, result.stderr
