"""Reading pytest's JUnit XML: reports that are missing, unreadable, or name tests without files."""

from __future__ import annotations

from pathlib import Path

from harness.verify.junit import JUnitReport, read_junit


def test_a_missing_report_says_so(tmp_path: Path) -> None:
    assert read_junit(tmp_path / "report.xml", tmp_path) == "wrote no test report"


def test_an_unreadable_report_says_why(tmp_path: Path) -> None:
    report = tmp_path / "report.xml"
    report.write_text('<testsuites><testsuite tests="3">')

    found = read_junit(report, tmp_path)

    assert isinstance(found, str)
    assert found.startswith("wrote an unreadable test report (no element found: line 1")


def test_test_ids_are_rebuilt_from_dotted_names_without_a_file_attribute(tmp_path: Path) -> None:
    (tmp_path / "tests" / "unit").mkdir(parents=True)
    (tmp_path / "tests" / "unit" / "test_calc.py").write_text("")
    report = tmp_path / "report.xml"
    report.write_text(
        '<testsuites><testsuite tests="3" failures="1" errors="1" skipped="0">'
        '<testcase classname="tests.unit.test_calc.TestCalc" name="test_mul">'
        '<failure message="assert 6 == 7">trace</failure></testcase>'
        '<testcase classname="" name="tests.unit.test_calc">'
        '<error message="collection failure">ImportError</error></testcase>'
        '<testcase classname="gone.module" name="test_x"/>'
        "</testsuite></testsuites>"
    )

    found = read_junit(report, tmp_path)

    assert isinstance(found, JUnitReport)
    assert [problem.test_id for problem in found.problems] == [
        "tests/unit/test_calc.py::TestCalc::test_mul",
        "tests/unit/test_calc.py",
    ]
    assert found.problems[1].collection
    assert found.counts() == "1 failed, 1 error, 1 passed of 3 tests"
