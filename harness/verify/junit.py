"""Reading pytest's JUnit XML report: the counts and each failing or erroring test by its id."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path


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


def read_junit(path: Path, root: Path) -> JUnitReport | str:
    """The report, or why there is none (a string that completes "pytest exited with code N and")."""
    if not path.is_file():
        return "wrote no test report"
    try:
        tree = ET.parse(path)
    except ET.ParseError as exc:
        return f"wrote an unreadable test report ({exc})"
    suites = list(tree.getroot().iter("testsuite"))

    def total(attribute: str) -> int:
        return sum(int(suite.get(attribute, "0")) for suite in suites)

    problems = [
        JUnitProblem(_test_id(case, root), child.tag, child.get("message", ""), child.text or "")
        for case in tree.getroot().iter("testcase")
        for child in case
        if child.tag in ("failure", "error")
    ]
    outcomes: dict[str, str] = {}
    for case in tree.getroot().iter("testcase"):
        kinds = {child.tag for child in case}
        outcome = next((k for k in ("error", "failure", "skipped") if k in kinds), "passed")
        # a test that failed and then errored in teardown keeps its worst outcome
        outcomes[_test_id(case, root)] = "failed" if outcome == "failure" else outcome
    return JUnitReport(
        total("tests"), total("failures"), total("errors"), total("skipped"), problems, outcomes
    )


def _test_id(case: ET.Element, root: Path) -> str:
    """``tests/test_x.py::TestClass::test_name[param]``, rebuilt from a JUnit test case."""
    classname, name, file = case.get("classname", ""), case.get("name", ""), case.get("file")
    if file:
        module = file.removesuffix(".py").replace("/", ".")
        if not classname and name == module:  # a collection error names its module
            return file
        if classname == module or classname.startswith(module + "."):
            classes = classname[len(module) :].split(".")[1:]
            return "::".join([file, *classes, name])
    # Without a file attribute (junit_family=xunit2): find the module file among the dots.
    dotted = classname or name
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        candidate = "/".join(parts[:cut]) + ".py"
        if (root / candidate).is_file():
            rest = parts[cut:] + ([name] if classname else [])
            return "::".join([candidate, *rest])
    return "::".join(part for part in (classname, name) if part)
