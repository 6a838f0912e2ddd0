"""Code under test that forges pytest's verdict from inside pytest: no trick passes the gate.

The tricks (tests/verify/verdict_tricks.py) are appended to the module the tests import, with
the bug in place, on a small project and on the bug-fix example; the gate runs unsandboxed, so it
holds on its own.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from harness.sandbox import Sandbox
from harness.verify.pytest_gate import PytestGate
from tests.verify.verdict_tricks import TRICKS, quiet

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "bugfix" / "project"

CALC = {
    "calc.py": "def add(a, b):\n    return a - b\n",
    "tests/test_calc.py": (
        "from calc import add\n\n"
        "def test_add():\n    assert add(1, 2) == 3\n\n"
        "def test_zero():\n    assert add(0, 0) == 0\n"
    ),
}

NONE = Sandbox("none")


@pytest.fixture(autouse=True)
def plain_pytest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)


def calc_project(root: Path, code: str) -> Path:
    for name, text in CALC.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + (code if name == "calc.py" else ""))
    return root


ADD = "tests/test_calc.py::test_add"
ZERO = "tests/test_calc.py::test_zero"
FOREIGN = r"pytest exited with code 0 and its report channel carried a line its reporter did not write \(line \d+\)"
ONE_FAILED = r"pytest: 1 failed, 1 passed of 2 tests"
EXIT_0 = "; yet pytest exited with code 0"
RAISED = "pytest's report says its call passed, but it raised AssertionError"

# What the gate says of each trick: with the line it writes into the pipes, and without it.
EXPECTED = {
    "atexit rewrites the results and exits 0": (FOREIGN, ONE_FAILED + EXIT_0, [ADD]),
    "TestReport.outcome patched to passed": (ONE_FAILED + EXIT_0, ONE_FAILED + EXIT_0, [ADD]),
    "a fixture of its own exits 0": (
        FOREIGN, "pytest exited with code 0 and ended before its session finished", [],
    ),
    "the results file rewritten after pytest wrote it": (FOREIGN, ONE_FAILED + EXIT_0, [ADD]),
    "builtins.open and print patched: clean results, fake summary": (
        ONE_FAILED, ONE_FAILED, [ADD],
    ),
    "the reporter silenced and the channel pointed at /dev/null": (
        FOREIGN, "pytest exited with code 0 and ended before its session finished", [],
    ),
    "sys.modules surgery replaces _pytest.runner": (
        "pytest: 2 errors of 2 tests" + EXIT_0, "pytest: 2 errors of 2 tests" + EXIT_0, [ADD, ZERO],
    ),
    "a plugin registered on import rewrites every report": (
        ONE_FAILED + EXIT_0, ONE_FAILED + EXIT_0, [ADD],
    ),
}  # fmt: skip


def test_there_are_eight_tricks_and_each_has_its_expected_verdict() -> None:
    assert len(TRICKS) == 8
    assert set(EXPECTED) == set(TRICKS)


@pytest.mark.parametrize("counterfeit", [True, False], ids=["counterfeit line", "no line"])
@pytest.mark.parametrize("trick", TRICKS)
def test_no_trick_passes_the_gate(tmp_path: Path, trick: str, counterfeit: bool) -> None:
    code = TRICKS[trick] if counterfeit else quiet(TRICKS[trick])
    report = PytestGate("tests", sandbox=NONE).check(calc_project(tmp_path, code))

    summary, failures = EXPECTED[trick][0 if counterfeit else 1], EXPECTED[trick][2]
    assert not report.passed
    assert re.fullmatch(summary, report.summary), report.summary
    if not re.match("pytest exited", report.summary):
        assert report.failures == failures


@pytest.mark.parametrize(
    ("trick", "message"),
    [("a plugin registered on import rewrites every report", RAISED),
     ("sys.modules surgery replaces _pytest.runner",
      "pytest's report says its setup passed, but it was never seen to run")],
)  # fmt: skip
def test_a_forged_pass_says_what_the_reporter_saw(tmp_path: Path, trick: str, message: str) -> None:
    report = PytestGate("tests", sandbox=NONE).check(calc_project(tmp_path, TRICKS[trick]))

    assert report.output_tail.startswith(
        f"{'ERROR' if 'setup' in message else 'FAILED'} {ADD}: {message}"
    )


@pytest.mark.parametrize("trick", TRICKS)
def test_no_trick_passes_the_bugfix_examples_gate(tmp_path: Path, trick: str) -> None:
    project = tmp_path / "project"
    shutil.copytree(EXAMPLE, project)
    package = project / "invoicing" / "__init__.py"
    package.write_text(package.read_text() + TRICKS[trick])

    report = PytestGate("tests", sandbox=NONE).check(project)

    assert not report.passed, report.summary
    assert "47 passed" not in report.summary


def test_the_honest_fix_passes(tmp_path: Path) -> None:
    project = calc_project(tmp_path, "")
    (project / "calc.py").write_text("def add(a, b):\n    return a + b\n")

    report = PytestGate("tests", sandbox=NONE).check(project)

    assert report.passed, report.summary
    assert report.summary == "pytest: 2 passed of 2 tests"
