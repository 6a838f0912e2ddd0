"""The pytest gate against a workspace that tries to pass without testing: each trick must fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.verify.gates import measure_baselines, run_gates
from harness.verify.pytest_gate import PytestGate

BUGGY = {
    "calc.py": "def add(a, b):\n    return a - b\n",
    "tests/test_calc.py": (
        "from calc import add\n\n"
        "def test_add():\n    assert add(1, 2) == 3\n\n"
        "def test_zero():\n    assert add(0, 0) == 0\n"
    ),
}


@pytest.fixture(autouse=True)
def plain_pytest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def project(root: Path, extra: dict[str, str]) -> Path:
    return write(root, {**BUGGY, **extra})


FAKE_PYTEST = "import sys\nprint('1 passed')\nsys.exit(0)\n"


@pytest.mark.parametrize("args", ["tests", ""])
@pytest.mark.parametrize(
    "planted",
    [
        {"pytest.py": FAKE_PYTEST},
        {"pytest/__init__.py": FAKE_PYTEST, "pytest/__main__.py": FAKE_PYTEST},
        {"sitecustomize.py": "import os\nos._exit(0)\n"},
        {"_pytest/__init__.py": FAKE_PYTEST},
    ],
    ids=["pytest.py", "pytest-package", "sitecustomize", "_pytest-package"],
)
def test_a_workspace_cannot_shadow_pytest(
    tmp_path: Path, args: str, planted: dict[str, str]
) -> None:
    report = PytestGate(args).check(project(tmp_path, planted))

    assert not report.passed
    assert report.summary == "pytest: 1 failed, 1 passed of 2 tests"
    assert report.failures == ["tests/test_calc.py::test_add"]


def test_exit_zero_without_a_report_fails(tmp_path: Path) -> None:
    conftest = "import os\n\ndef pytest_configure(config):\n    os._exit(0)\n"
    report = PytestGate("tests").check(project(tmp_path, {"conftest.py": conftest}))

    assert not report.passed
    assert report.exit_code == 0
    assert report.summary == "pytest exited with code 0 and wrote no test report"


def test_a_forced_exit_status_does_not_hide_failures(tmp_path: Path) -> None:
    conftest = "def pytest_sessionfinish(session):\n    session.exitstatus = 0\n"
    report = PytestGate("tests").check(project(tmp_path, {"conftest.py": conftest}))

    assert report.exit_code == 0
    assert not report.passed
    assert report.failures == ["tests/test_calc.py::test_add"]


def test_collect_only_tests_nothing_and_fails(tmp_path: Path) -> None:
    ini = "[pytest]\naddopts = --co\n"
    report = PytestGate("tests").check(project(tmp_path, {"pytest.ini": ini}))

    assert not report.passed
    assert report.exit_code == 0
    assert report.summary == "pytest: no tests ran; nothing was tested"


def test_every_test_skipped_fails(tmp_path: Path) -> None:
    conftest = (
        "import pytest\n\n"
        "def pytest_collection_modifyitems(items):\n"
        "    for item in items:\n"
        "        item.add_marker(pytest.mark.skip(reason='later'))\n"
    )
    report = PytestGate("tests").check(project(tmp_path, {"conftest.py": conftest}))

    assert not report.passed
    assert (
        report.summary
        == "pytest: 2 skipped of 2 tests; every test was skipped, so nothing was tested"
    )


FIXED = "def add(a, b):\n    return a + b\n"
SESSIONS = (
    "from pathlib import Path\n\n"
    "def pytest_sessionstart(session):\n"
    "    with open(Path(__file__).parent / 'sessions.log', 'a') as log:\n"
    "        log.write(('collect-only' if session.config.option.collectonly else 'run') + '\\n')\n"
)
"""A conftest that writes one line per pytest session started in the workspace."""


@pytest.mark.parametrize(("code", "passed"), [(BUGGY["calc.py"], False), (FIXED, True)])
def test_one_check_is_one_pytest_process(tmp_path: Path, code: str, passed: bool) -> None:
    workspace = project(tmp_path, {"conftest.py": SESSIONS, "calc.py": code})

    report = PytestGate("tests").check(workspace)

    assert report.passed is passed
    assert (workspace / "sessions.log").read_text() == "run\n"  # no second collection


@pytest.mark.parametrize(
    "conftest",
    [
        "def pytest_collection_finish(session):\n"
        "    session.items[:] = [i for i in session.items if i.name != 'test_add']\n",
        "import pytest\n\n@pytest.hookimpl(tryfirst=True)\ndef pytest_runtestloop(session):\n"
        "    session.items = [i for i in session.items if i.name != 'test_add']\n",
    ],
    ids=["collection_finish", "runtestloop"],
)
def test_a_test_hidden_after_its_collection_fails_the_run(tmp_path: Path, conftest: str) -> None:
    workspace = project(tmp_path, {"conftest.py": conftest})

    report = PytestGate("tests").check(workspace)

    assert report.exit_code == 0
    assert not report.passed
    assert report.summary == (
        "pytest exited with code 0 and did not finish 1 collected test: "
        "tests/test_calc.py::test_add"
    )


def test_a_run_cut_short_with_status_zero_fails_and_the_whole_run_passes(tmp_path: Path) -> None:
    exits = (
        "import pytest\n\ndef add(a, b):\n    if (a, b) == (0, 0):\n"
        "        pytest.exit('done', returncode=0)\n    return a + b\n"
    )
    cut = PytestGate("tests").check(project(tmp_path / "cut", {"calc.py": exits}))

    assert cut.exit_code == 0
    assert not cut.passed
    assert cut.summary == (
        "pytest exited with code 0 and did not finish 1 collected test: "
        "tests/test_calc.py::test_zero"
    )
    whole = PytestGate("tests").check(project(tmp_path / "whole", {"calc.py": FIXED}))
    assert (whole.passed, whole.summary) == (True, "pytest: 2 passed of 2 tests")


@pytest.mark.parametrize(
    "trick",
    [
        {"conftest.py": "import pytest\n\ndef pytest_collection_modifyitems(items):\n"
         "    for item in items:\n        if item.name == 'test_add':\n"
         "            item.add_marker(pytest.mark.xfail(reason='later'))\n"},
        {"conftest.py": "def pytest_collection_modifyitems(config, items):\n"
         "    kept = [i for i in items if i.name != 'test_add']\n"
         "    config.hook.pytest_deselected(items=[i for i in items if i not in kept])\n"
         "    items[:] = kept\n"},
        {"calc.py": "import pytest\n\ndef add(a, b):\n    if (a, b) == (1, 2):\n"
         "        pytest.skip('later')\n    return a - b\n"},
    ],
    ids=["xfail", "deselect", "code skips"],
)  # fmt: skip
def test_a_test_that_ran_at_the_base_must_run_and_pass(
    tmp_path: Path, trick: dict[str, str]
) -> None:
    """A round that would pass with no test failing: only the base shows what it left out."""
    base = project(tmp_path / "base", {})
    gate = PytestGate("tests")
    baselines = measure_baselines([gate], base)
    assert baselines["pytest"].outcomes == {
        "tests/test_calc.py::test_add": "failed",
        "tests/test_calc.py::test_zero": "passed",
    }
    gamed = project(tmp_path / "round", trick)

    (report,) = run_gates([gate], gamed, baselines=baselines)

    assert not report.passed
    assert report.failures == ["tests/test_calc.py::test_add"]
    assert "1 test that ran at the base commit did not pass now" in report.summary
    # without the baseline the same trick looks like a pass: the baseline is what catches it
    assert gate.check(gamed).passed


def test_the_fix_passes_against_the_baseline(tmp_path: Path) -> None:
    base = project(tmp_path / "base", {})
    gate = PytestGate("tests")
    baselines = measure_baselines([gate], base)
    fixed = project(tmp_path / "round", {"calc.py": "def add(a, b):\n    return a + b\n"})

    (report,) = run_gates([gate], fixed, baselines=baselines)

    assert report.passed
    assert report.summary == "pytest: 2 passed of 2 tests"


IMPORT_BUG = {
    "calc/__init__.py": "",
    "calc/helpers.py": "def normalize(text):\n    return text.strip().lower()\n",
    "tests/test_calc.py": (
        "from calc.helpers import normalise\n\n"
        "def test_normalise():\n    assert normalise(' Ab ') == 'ab'\n"
    ),
    "tests/test_other.py": "def test_other():\n    assert True\n",
}


def test_a_module_that_could_not_be_collected_at_the_base_is_not_a_test_to_keep(
    tmp_path: Path,
) -> None:
    base = write(tmp_path / "base", IMPORT_BUG)
    gate = PytestGate("tests")
    baselines = measure_baselines([gate], base)
    assert baselines["pytest"].outcomes == {"tests/test_calc.py": "error"}  # nothing else ran
    helpers = "def normalise(text):\n    return text.strip().lower()\n"
    fixed = write(tmp_path / "round", {**IMPORT_BUG, "calc/helpers.py": helpers})

    (report,) = run_gates([gate], fixed, baselines=baselines)

    assert report.passed, report.summary
    assert report.summary == "pytest: 2 passed of 2 tests"
    assert "did not pass now" not in report.summary
    (unfixed,) = run_gates([gate], base, baselines=baselines)
    assert not unfixed.passed
    assert unfixed.failures == ["tests/test_calc.py"]
