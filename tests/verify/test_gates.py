"""Gates against real subprocesses: pytest runs on temporary projects, shell commands, predicates."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path
from typing import Any

import pydantic
import pytest

from harness.core.errors import ConfigError
from harness.core.event_schema import GateReportEvent
from harness.sandbox import Sandbox
from harness.verify.gates import TAIL_CHARS, CommandGate, Gate, GateReport, PredicateGate, run_gates
from harness.verify.pytest_gate import PytestGate

CALC_TESTS = """
import pytest


@pytest.mark.parametrize("a, b, total", [(1, 1, 2), (2, 3, 6), (0, 0, 0)])
def test_add(a, b, total):
    assert a + b == total, f"values differ: {a} + {b} is not {total}"


class TestCalc:
    def test_ok(self):
        assert 2 * 2 == 4

    def test_mul(self):
        assert 2 * 3 == 7, "multiplication is off"

    class TestNested:
        def test_deep(self):
            assert [1, 2] == [1, 3]


@pytest.fixture
def database():
    raise RuntimeError("database unavailable")


def test_setup_error(database):
    pass
"""

CALC_FAILURES = [
    "tests/unit/test_calc.py::test_add[2-3-6]",
    "tests/unit/test_calc.py::TestCalc::test_mul",
    "tests/unit/test_calc.py::TestCalc::TestNested::test_deep",
    "tests/unit/test_calc.py::test_setup_error",
]


@pytest.fixture(autouse=True)
def plain_pytest(monkeypatch: pytest.MonkeyPatch) -> None:
    """Child pytest runs without extra options from the environment."""
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)


def make_project(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def all_files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def is_dead(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")  # an orphan nobody reaped yet is still dead


# --- PytestGate ------------------------------------------------------------------------------


def test_pytest_gate_passes_and_leaves_no_files_behind(tmp_path: Path) -> None:
    files = {
        "calc.py": "def add(a, b):\n    return a + b\n",
        "tests/test_ok.py": "from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    }
    project = make_project(tmp_path, files)
    before = all_files(project)

    report = PytestGate().check(project)

    assert report.passed
    assert report.exit_code == 0
    assert report.failures == []
    assert report.summary == "pytest: 1 passed of 1 tests"
    assert all_files(project) == before  # no cache, byte code or JUnit file in the workspace


@pytest.mark.parametrize("family_args", ["", "-o junit_family=xunit2"])
def test_pytest_gate_names_failing_tests_and_their_messages(
    tmp_path: Path, family_args: str
) -> None:
    project = make_project(tmp_path, {"tests/unit/test_calc.py": CALC_TESTS})

    report = PytestGate(family_args).check(project)

    assert not report.passed
    assert report.exit_code == 1
    assert report.failures == CALC_FAILURES
    assert report.summary == "pytest: 3 failed, 1 error, 3 passed of 7 tests"
    assert "FAILED tests/unit/test_calc.py::test_add[2-3-6]: AssertionError: values differ" in (
        report.output_tail
    )
    assert "multiplication is off" in report.output_tail
    assert "ERROR tests/unit/test_calc.py::test_setup_error" in report.output_tail
    assert "database unavailable" in report.output_tail
    assert "short test summary info" not in report.output_tail  # failure text, not the log


def test_pytest_gate_bounds_the_failure_text(tmp_path: Path) -> None:
    many = (
        "import pytest\n\n@pytest.mark.parametrize('n', range(60))\n"
        "def test_many(n):\n    assert n < 0, 'long message ' * 200\n"
    )
    project = make_project(tmp_path, {"tests/test_many.py": many})

    report = PytestGate("tests/test_many.py").check(project)

    assert report.failures == [f"tests/test_many.py::test_many[{n}]" for n in range(60)]
    assert len(report.output_tail) <= TAIL_CHARS + 200
    assert "FAILED tests/test_many.py::test_many[0]" in report.output_tail
    assert "more not shown" in report.output_tail


def test_pytest_gate_fails_when_no_tests_are_collected(tmp_path: Path) -> None:
    project = make_project(tmp_path, {"tests/helpers.py": "VALUE = 1\n"})

    report = PytestGate("tests").check(project)

    assert not report.passed
    assert report.exit_code == 5
    assert report.summary == "pytest collected no tests (exit code 5) in tests"
    assert PytestGate().check(project).summary == "pytest collected no tests (exit code 5)"


def test_pytest_gate_reports_collection_errors(tmp_path: Path) -> None:
    files = {
        "tests/test_ok.py": "def test_fine():\n    assert True\n",
        "tests/test_broken.py": "import module_that_does_not_exist\n\ndef test_x():\n    pass\n",
    }
    project = make_project(tmp_path, files)

    report = PytestGate().check(project)

    assert not report.passed
    assert report.failures == ["tests/test_broken.py"]
    assert report.summary.endswith(
        "; could not collect tests/test_broken.py "
        "(ModuleNotFoundError: No module named 'module_that_does_not_exist')"
    )
    assert "No module named 'module_that_does_not_exist'" in report.output_tail


def test_pytest_gate_times_out(tmp_path: Path) -> None:
    slow = "import time\n\ndef test_slow():\n    time.sleep(60)\n"
    project = make_project(tmp_path, {"tests/test_slow.py": slow})

    start = time.monotonic()
    report = PytestGate(timeout=1.5).check(project)

    assert time.monotonic() - start < 10
    assert not report.passed
    assert report.exit_code is None
    assert report.summary == "pytest timed out after 1.5s (process group killed)"


def test_pytest_gate_without_a_report_says_so(tmp_path: Path) -> None:
    project = make_project(tmp_path, {"tests/test_ok.py": "def test_ok():\n    pass\n"})

    report = PytestGate("--no-such-option").check(project)

    assert not report.passed
    assert report.exit_code == 4
    assert report.summary.startswith("pytest exited with code 4 and wrote no test report")
    assert "unrecognized arguments: --no-such-option" in report.output_tail


def test_pytest_gate_refuses_a_line_its_reporter_did_not_write(tmp_path: Path) -> None:
    counterfeit = (
        "import sys\n\ndef pytest_unconfigure(config):\n"
        '    open(sys.argv[2], \'w\').write(\'0 99 {"kind": "finish", "exitstatus": 0}\\n\')\n'
    )
    files = {"conftest.py": counterfeit, "tests/test_ok.py": "def test_ok():\n    pass\n"}
    project = make_project(tmp_path, files)

    report = PytestGate("tests").check(project)

    assert not report.passed
    assert report.exit_code == 0
    assert re.fullmatch(
        r"pytest exited with code 0 and its report channel carried a line its reporter did not "
        r"write \(line \d+\)",
        report.summary,
    ), report.summary


def test_pytest_gate_fails_a_clean_report_when_pytest_exits_non_zero(tmp_path: Path) -> None:
    floor = "def pytest_sessionfinish(session):\n    print('coverage below the floor')\n"
    floor += "    session.exitstatus = 2\n"
    files = {"conftest.py": floor, "tests/test_ok.py": "def test_ok():\n    pass\n"}
    project = make_project(tmp_path, files)

    report = PytestGate("tests").check(project)

    assert not report.passed
    assert report.exit_code == 2
    assert report.failures == []
    assert report.summary.startswith("pytest: 1 passed of 1 tests; exited with code 2: ")
    assert "coverage below the floor" in report.output_tail


@pytest.mark.parametrize(
    ("args", "paths"),
    [
        ("", ()),
        ("-x -q", ()),
        ("--cov src tests", ("tests",)),
        ("--cov=src -n 4 --cov-report term checks", ("checks",)),
        ("-xk slow tests -rA -kfast other", ("tests", "other")),
        ("-p no:randomly --tb short -- -odd.py", ("-odd.py",)),
        (
            "-x -k 'not slow' tests/unit/test_a.py::test_b tests/integration --maxfail 2",
            ("tests/unit/test_a.py", "tests/integration"),
        ),
        (["-m", "fast", "checks", "--tb=short"], ("checks",)),
    ],
)
def test_pytest_gate_test_paths(args: str | list[str], paths: tuple[str, ...]) -> None:
    assert PytestGate(args).test_paths == paths


# --- CommandGate -----------------------------------------------------------------------------


def test_command_gate_passes_in_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "marker.txt").write_text("found the marker\n")

    report = CommandGate("cat marker.txt").check(tmp_path)

    assert report.passed
    assert report.name == "cat marker.txt"
    assert report.exit_code == 0
    assert "found the marker" in report.output_tail


def test_command_gate_fails_on_nonzero_exit(tmp_path: Path) -> None:
    code = "import sys; print('lint: 3 problems'); sys.exit(3)"

    report = CommandGate([sys.executable, "-c", code], name="lint").check(tmp_path)

    assert not report.passed
    assert report.exit_code == 3
    assert report.summary == "`lint` failed with exit code 3: lint: 3 problems"


def test_command_gate_with_a_missing_program_fails_and_says_why(tmp_path: Path) -> None:
    report = CommandGate(["no-such-binary-here"]).check(tmp_path)

    assert not report.passed
    assert report.exit_code == 127
    assert report.summary.startswith(
        "`no-such-binary-here` failed with exit code 127: cannot start no-such-binary-here: "
    )


def test_command_gate_timeout_kills_the_process_group(tmp_path: Path) -> None:
    command = "echo $$ > shell.pid; sleep 100 & echo $! > child.pid; sleep 100"

    start = time.monotonic()
    sandbox = Sandbox("none")  # host pids: no PID namespace in the way
    report = CommandGate(command, name="sleepy", timeout=1, sandbox=sandbox).check(tmp_path)
    elapsed = time.monotonic() - start

    assert elapsed < 60  # the timeout's 1 s, not the command's 100 s
    assert not report.passed
    assert report.exit_code is None
    assert report.summary == "`sleepy` timed out after 1s (process group killed)"
    pids = [int((tmp_path / name).read_text()) for name in ("shell.pid", "child.pid")]
    deadline = time.monotonic() + 2
    while not all(is_dead(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(is_dead(pid) for pid in pids)


def test_command_gate_keeps_only_the_tail_of_long_output(tmp_path: Path) -> None:
    code = "print('x' * 1_000_000); print('THE END')"

    report = CommandGate([sys.executable, "-c", code]).check(tmp_path)

    assert report.passed
    assert len(report.output_tail) <= TAIL_CHARS
    assert report.output_tail.rstrip().endswith("THE END")
    marker = re.match(r"\[\.\.\. (\d+) characters truncated \.\.\.\]\n", report.output_tail)
    assert marker is not None
    kept = len(report.output_tail) - len(marker.group(0))
    assert int(marker.group(1)) + kept == 1_000_000 + len("\nTHE END\n")


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: CommandGate("  "), "cmd"),
        (lambda: CommandGate([]), "cmd"),
        (lambda: CommandGate("true", timeout=0), "timeout"),
        (lambda: PytestGate(timeout=-1), "timeout"),
        (lambda: PredicateGate(lambda ws: True, name=""), "name"),
    ],
)
def test_gate_configuration_errors_name_the_field(make: Any, field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        make()


def test_missing_workspace_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="workspace"):
        CommandGate("true").check(tmp_path / "nowhere")


# --- PredicateGate ---------------------------------------------------------------------------


def test_predicate_gate_accepts_a_bool(tmp_path: Path) -> None:
    seen: list[Path] = []

    def readme_exists(workspace: Path) -> bool:
        seen.append(workspace)
        return (workspace / "README.md").exists()

    gate = PredicateGate(readme_exists, name="readme")
    failed = gate.check(str(tmp_path))
    (tmp_path / "README.md").write_text("hello")
    passed = gate.check(tmp_path)

    assert seen == [tmp_path, tmp_path]
    assert (failed.passed, failed.summary) == (False, "readme failed")
    assert (passed.passed, passed.summary) == (True, "readme passed")


def test_predicate_gate_accepts_a_message(tmp_path: Path) -> None:
    gate = PredicateGate(lambda ws: (False, "README is missing\nadd a README.md"), name="readme")

    report = gate.check(tmp_path)

    assert not report.passed
    assert report.summary == "README is missing"
    assert "add a README.md" in report.output_tail


def test_predicate_gate_accepts_a_report(tmp_path: Path) -> None:
    inner = GateReport(name="other", passed=False, summary="2 broken links", failures=["a", "b"])

    report = PredicateGate(lambda ws: inner, name="links").check(tmp_path)

    assert report.name == "links"
    assert (report.passed, report.summary, report.failures) == (False, "2 broken links", ["a", "b"])


def test_predicate_gate_bounds_the_output_of_a_report(tmp_path: Path) -> None:
    huge = GateReport(name="x", passed=False, summary="bad", output_tail="a" * 50_000 + "END")

    report = PredicateGate(lambda ws: huge, name="check").check(tmp_path)

    assert len(report.output_tail) <= TAIL_CHARS
    assert report.output_tail.endswith("aEND")
    assert (report.name, report.summary, report.passed) == ("check", "bad", False)


def test_predicate_gate_turns_an_exception_into_a_failure(tmp_path: Path) -> None:
    def broken(workspace: Path) -> bool:
        raise ValueError("config.toml: bad value")

    report = PredicateGate(broken, name="config").check(tmp_path)

    assert not report.passed
    assert report.summary == "config raised ValueError: config.toml: bad value"
    assert "Traceback" in report.output_tail


def test_predicate_gate_rejects_an_unknown_return(tmp_path: Path) -> None:
    gate = PredicateGate(lambda ws: "yes", name="odd")  # type: ignore[arg-type, return-value]

    with pytest.raises(ConfigError, match="odd: the predicate returned 'yes'"):
        gate.check(tmp_path)


# --- run_gates and the report ----------------------------------------------------------------


def test_run_gates_stops_at_the_first_failure(tmp_path: Path) -> None:
    later: list[str] = []
    gates: list[Gate] = [
        CommandGate("true", name="build"),
        CommandGate("exit 1", name="lint"),
        PredicateGate(lambda ws: later.append("ran") or True, name="docs"),
    ]

    reports = run_gates(gates, tmp_path)

    assert [(r.name, r.passed) for r in reports] == [("build", True), ("lint", False)]
    assert later == []


def test_run_gates_runs_every_gate_when_all_pass(tmp_path: Path) -> None:
    gates = [CommandGate("true", name="a"), PredicateGate(lambda ws: True, name="b")]

    reports = run_gates(gates, tmp_path)

    assert [(r.name, r.passed) for r in reports] == [("a", True), ("b", True)]
    assert all(isinstance(gate, Gate) for gate in gates)


def test_gate_report_is_frozen_and_fits_the_event_schema() -> None:
    report = GateReport(name="pytest", passed=False, summary="1 failed", failures=["t.py::x"])

    with pytest.raises(pydantic.ValidationError):
        report.passed = True  # type: ignore[misc]
    fields = report.model_dump(include={"name", "passed", "summary", "failures", "duration"})
    built = GateReportEvent(run_id="run-1", round=2, **fields)
    assert built.model_dump()["failures"] == ["t.py::x"]


SUBTESTS = """
def test_each(subtests):
    for n in range(3):
        with subtests.test(msg="n", n=n):
            assert n < LIMIT
"""


@pytest.mark.parametrize(("limit", "passed"), [(3, True), (2, False)])
def test_pytest_gate_takes_subtests_as_parts_of_their_test(
    tmp_path: Path, limit: int, passed: bool
) -> None:
    project = make_project(tmp_path, {"tests/test_sub.py": f"LIMIT = {limit}\n" + SUBTESTS})

    report = PytestGate("tests").check(project)

    assert report.passed is passed, report.summary
    if passed:
        assert report.summary == "pytest: 1 passed of 1 tests"
    else:
        assert report.summary == "pytest: 1 failed of 1 tests"
        assert report.failures == ["tests/test_sub.py::test_each"]
        assert "[n] (n=2) failed: assert 2 < 2" in report.output_tail
