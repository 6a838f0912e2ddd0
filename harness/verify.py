"""One round's verification: protected files, then the objective gates, then the critic.

The author's word never counts: a round passes only through what is decided here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.critic import Critic, Verdict
from harness.events import EventSink
from harness.gates import Gate, GateReport, run_gates
from harness.workspace_paths import protecting_pattern

PYTEST_CONFIG_FILES = ("conftest.py", "**/conftest.py", "pytest.ini", "tox.ini", "setup.cfg")
"""Files that can switch tests off; protected by default when a gate runs pytest."""


@dataclass(frozen=True)
class Evidence:
    """What verification found."""

    violations: tuple[str, ...]
    gates: tuple[GateReport, ...]
    verdict: Verdict | None


def default_protect(gates: Sequence[Gate]) -> tuple[str, ...]:
    """The test paths the gates run, and pytest's configuration files when a gate runs pytest."""
    paths: list[str] = []
    for gate in gates:
        test_paths = getattr(gate, "test_paths", None)
        if test_paths is None:
            continue
        paths.extend(str(p).strip("/") for p in test_paths)
        paths.extend(PYTEST_CONFIG_FILES)
    return tuple(dict.fromkeys(paths))


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
    verdict = critic.review(goal, artifact(), criteria=criteria)
    events.emit(
        "critic_verdict",
        round=round_number,
        score=verdict.score,
        passed=verdict.passed,
        reasons=list(verdict.reasons),
        fixes=list(verdict.fixes),
    )
    return Evidence((), reports, verdict)
