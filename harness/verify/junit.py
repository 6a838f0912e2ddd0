"""A pytest run's findings in JUnit's terms: the counts, each test's outcome, the failing tests.

The pytest gate builds it from what its reporter sent while the tests ran
(:mod:`harness.verify.run_outcomes`), not from a results file the code under test could rewrite.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class JUnitProblem:
    """One failing or erroring test case from a JUnit report."""

    test_id: str
    kind: str  # "failure" or "error"
    message: str
    text: str

    @property
    def collection(self) -> bool:
        """Whether pytest could not even collect this module."""
        return self.kind == "error" and self.message == "collection failure"

    @property
    def cause(self) -> str:
        """The exception pytest reported, its last ``E   `` line (``ModuleNotFoundError: No
        module named 'toolz'``); "" when the text has none."""
        raised = [line[1:].strip() for line in self.text.splitlines() if line.startswith("E ")]
        return next((line for line in reversed(raised) if line), "")[:200]


@dataclass(frozen=True)
class JUnitReport:
    """The totals of a JUnit report and its failing or erroring test cases."""

    tests: int
    failed: int
    errors: int
    skipped: int
    problems: list[JUnitProblem]
    outcomes: dict[str, str] = field(default_factory=dict)
    """Each test case's id and outcome: ``passed``, ``failed``, ``error`` or ``skipped``."""

    @property
    def passed(self) -> int:
        return self.tests - self.failed - self.errors - self.skipped

    def counts(self) -> str:
        """``1 failed, 2 passed of 3 tests``, leaving out the zeros."""
        parts = [
            f"{self.failed} failed",
            f"{self.errors} error{'s' if self.errors > 1 else ''}",
            f"{self.passed} passed",
            f"{self.skipped} skipped",
        ]
        text = ", ".join(part for part in parts if not part.startswith("0 "))
        return f"{text} of {self.tests} tests" if text else "no tests ran"
