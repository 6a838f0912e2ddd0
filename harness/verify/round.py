"""One round's verification: protected files, then the objective gates, then the critic.

The author's word never counts: a round passes only through what is decided here.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.core.errors import ConfigError
from harness.core.sink import EventSink
from harness.tools.paths import check_protect_patterns, protecting_pattern
from harness.verify.critic import Critic, Verdict
from harness.verify.gates import Gate, GateReport, run_gates

PYTEST_CONFIG_FILES = ("conftest.py", "**/conftest.py", "pytest.ini", "tox.ini", "setup.cfg")
"""Files that can switch tests off; protected by default when a gate runs pytest.

``pyproject.toml`` can too (``[tool.pytest.ini_options]``), but projects edit it for their
dependencies and version, so protecting it by default would fail honest rounds; add it to
``protect`` when the task has no reason to touch it."""

ROOT_TEST_FILES = ("tests", "test_*.py", "**/test_*.py", "*_test.py", "**/*_test.py")
"""What pytest collects when a gate names no path: ``tests`` and test files anywhere."""


@dataclass(frozen=True)
class Evidence:
    """What verification found."""

    violations: tuple[str, ...]
    gates: tuple[GateReport, ...]
    verdict: Verdict | None


def default_protect(gates: Sequence[Gate]) -> tuple[str, ...]:
    """The test paths the gates run, and pytest's configuration files when a gate runs pytest.

    The result is validated protect patterns relative to the workspace. A gate that names no
    test path (pytest collects from the root) protects :data:`ROOT_TEST_FILES`. Raises
    :class:`ConfigError` naming the gate for a test path that is not inside the workspace.
    """
    patterns: list[str] = []
    for gate in gates:
        test_paths = getattr(gate, "test_paths", None)
        if test_paths is None:
            continue
        relative = [_inside(gate, str(path)) for path in test_paths]
        patterns.extend(path for path in relative if path != ".")
        if not relative or "." in relative:
            patterns.extend(ROOT_TEST_FILES)
        patterns.extend(PYTEST_CONFIG_FILES)
    return check_protect_patterns(dict.fromkeys(patterns))


def _inside(gate: Gate, path: str) -> str:
    """``path`` normalised (``./tests/`` is ``tests``, the root is ``.``), or ConfigError."""
    normal = posixpath.normpath(path)
    if posixpath.isabs(normal):
        raise ConfigError(
            f"gates: {type(gate).__name__} test path {path!r} is absolute; give it relative "
            "to the workspace (the gate runs there), or pass protect= yourself"
        )
    if normal == ".." or normal.startswith("../"):
        raise ConfigError(
            f"gates: {type(gate).__name__} test path {path!r} is outside the workspace"
        )
    return normal


def protected_changes(changed: Sequence[str], protect: Sequence[str]) -> tuple[str, ...]:
    """The changed files that a protect pattern covers."""
    return tuple(path for path in changed if protecting_pattern(protect, path) is not None)


def verify(
    *,
    round_number: int,
    goal: str,
    workspace: Path,
    changed: Sequence[str],
    protect: Sequence[str],
    gates: Sequence[Gate],
    critic: Critic | None,
    artifact: Callable[[], str],
    events: EventSink,
    criteria: str | None = None,
) -> Evidence:
    """Protected files first (the shell can bypass the tools, so the diff is what counts), then
    the gates in order until one fails, then the critic only if every gate passed.
    ``criteria`` replace the critic's own for this review (a loop's SKILL.md supplies them)."""
    violations = protected_changes(changed, protect)
    if violations:
        return Evidence(violations, (), None)
    reports = tuple(run_gates(gates, workspace))
    for report in reports:
        events.emit(
            "gate_report",
            round=round_number,
            name=report.name,
            passed=report.passed,
            summary=report.summary,
            failures=list(report.failures),
            duration=report.duration,
        )
    if critic is None or not all(r.passed for r in reports):
        return Evidence((), reports, None)
    verdict = critic.review(goal, artifact(), criteria=criteria, round=round_number)
    return Evidence((), reports, verdict)
