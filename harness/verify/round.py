"""One round's verification: protected files, code that reaches into the test machinery, then
the objective gates, then the critic.

The author's word never counts: a round passes only through what is decided here.
"""

from __future__ import annotations

import posixpath
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.core.errors import ConfigError, ToolError
from harness.core.event_schema import GateReportEvent
from harness.core.sink import EventSink
from harness.tools.paths import check_protect_patterns, protecting_pattern
from harness.verify.critic import Verdict
from harness.verify.gates import Gate, GateReport, RoundChange, SuiteGate, run_gates
from harness.verify.junit import JUnitReport
from harness.verify.machinery import FileReader, machinery_reaches, machinery_report
from harness.verify.panel import Reviewer
from harness.verify.reproduction import ReproductionGate

PYTEST_CONFIG_FILES = (
    "conftest.py",
    "**/conftest.py",
    "pytest.ini",
    ".pytest.ini",
    "pytest.toml",
    ".pytest.toml",
    "tox.ini",
    "setup.cfg",
    "**/pyproject.toml:tool.pytest",
    "sitecustomize.py",
    "**/sitecustomize.py",
    "usercustomize.py",
    "**/usercustomize.py",
    "**/*.pth",
    "pytest.py",
    "pytest",
    "_pytest",
)
"""What can switch tests off or stand in for pytest; protected by default when a gate runs
pytest. ``GLOB:TABLE`` protects one TOML table (and the tables inside it) of the files GLOB
matches: a project may edit ``pyproject.toml`` for its dependencies, not its
``[tool.pytest.ini_options]`` (or pytest 9's ``[tool.pytest]``)."""

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
    test path (pytest collects from the root) protects :data:`ROOT_TEST_FILES`. With a
    :class:`ReproductionGate` the round must write tests, so only pytest's configuration is
    protected (a test gate's baseline still has every test that ran at the base run and pass).
    Raises :class:`ConfigError` naming the gate for a test path that is not inside the workspace.
    """
    writes_tests = any(isinstance(gate, ReproductionGate) for gate in gates)
    patterns: list[str] = list(PYTEST_CONFIG_FILES) if writes_tests else []
    for gate in gates:
        if not isinstance(gate, SuiteGate):
            continue
        relative = [_inside(gate, str(path)) for path in gate.test_paths]
        if writes_tests:
            continue
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


def protected_changes(
    changed: Sequence[str],
    protect: Sequence[str],
    *,
    before: FileReader | None = None,
    after: FileReader | None = None,
) -> tuple[str, ...]:
    """The changed files that a protect pattern covers, and ``FILE [TABLE]`` for a protected
    TOML table whose content differs between ``before`` (the base) and ``after`` (the round);
    table patterns are checked only when both readers are given."""
    paths = [p for p in protect if not _TABLE_PATTERN.fullmatch(p)]
    found = [path for path in changed if protecting_pattern(paths, path) is not None]
    if before is None or after is None:
        return tuple(found)
    for pattern in protect:
        match = _TABLE_PATTERN.fullmatch(pattern)
        if match is None:
            continue
        glob, table = match.groups()
        for path in changed:
            if path in found or protecting_pattern([glob], path) is None:
                continue
            if _toml_table(before(path), table) != _toml_table(after(path), table):
                found.append(f"{path} [{table}]")
    return tuple(found)


_TABLE_PATTERN = re.compile(r"(.+\.toml):([A-Za-z0-9_.-]+)")


def _toml_table(text: str | None, table: str) -> object:
    """The value of the dotted ``table`` in TOML ``text``; None when absent, a marker when the
    file cannot be read as TOML (so breaking the file counts as a change)."""
    if text is None:
        return None
    try:
        data: object = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return ("unreadable TOML", text)
    for key in table.split("."):
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def gate_event(round_number: int, report: GateReport) -> GateReportEvent:
    """The ``gate_report`` event of ``report``, a gate of round ``round_number``."""
    return GateReportEvent(round=round_number, **report.model_dump(include=_GATE_EVENT_FIELDS))


_GATE_EVENT_FIELDS = set(GateReport.model_fields) & set(GateReportEvent.model_fields)
"""What a gate's report gives its event: the fields both declare (a report of a gate's own
making may hold more)."""


def verify(
    *,
    round_number: int,
    goal: str,
    workspace: Path,
    changed: Sequence[str],
    protect: Sequence[str],
    gates: Sequence[Gate],
    critic: Reviewer | None,
    artifact: Callable[[], str],
    events: EventSink,
    criteria: str | None = None,
    read_base: FileReader | None = None,
    baselines: Mapping[str, JUnitReport] | None = None,
    change: RoundChange | None = None,
) -> Evidence:
    """Protected files first (the shell can bypass the tools, so the diff is what counts), then
    (when there are gates) the added lines that reach into the test machinery, which fail the
    round as a report of their own; then the gates in order until one fails, then the critic
    only if every gate passed.

    ``workspace`` is where the gates judge: the outer loop passes a clean checkout of the
    round. ``read_base`` reads a file at the base, for protected TOML tables; ``baselines`` are
    the pytest gates' findings at the base; ``change`` the round's change against it, for a
    gate that judges it (:class:`~harness.verify.gates.ChangeGate`). ``criteria`` replace the critic's own for this
    review (a loop's SKILL.md supplies them)."""
    violations = protected_changes(
        changed, protect, before=read_base, after=lambda path: _read(workspace / path)
    )
    if violations:
        return Evidence(violations, (), None)
    found = machinery_reaches(changed, workspace, read_base) if gates else []
    if found:
        reports: tuple[GateReport, ...] = (machinery_report(found),)
    else:
        reports = tuple(run_gates(gates, workspace, baselines=baselines, change=change))
    for report in reports:
        events.emit(gate_event(round_number, report))
    if critic is None or not all(r.passed for r in reports):
        return Evidence((), reports, None)
    try:
        text = artifact()
    except ToolError as exc:
        verdict = critic.fail(
            f"the artifact was not read: {exc}",
            "Deliver the artifact as a regular file in the workspace, not a link to one.",
            round=round_number,
        )
        return Evidence((), reports, verdict)
    notes = [f"The {r.name} gate notes:\n{r.notes.strip()}" for r in reports if r.notes.strip()]
    verdict = critic.review(goal, text, criteria=criteria, notes=notes, round=round_number)
    return Evidence((), reports, verdict)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (FileNotFoundError, IsADirectoryError, UnicodeDecodeError):
        return None
