"""The pytest gate in the project's own environment: a dependency only its ``.venv`` holds.

The project imports ``toolz``, which the harness's environment lacks; a real virtual environment
made with ``python -m venv`` holds a tiny local ``toolz`` dropped into its site-packages. Every
test runs under both backends the tests use (bwrap and none), with the venv under ``/tmp``,
which bwrap hides unless it is mounted back.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from harness.sandbox import Sandbox
from harness.sandbox.python_env import PythonEnv, detected_env
from harness.verify.junit import JUnitReport
from harness.verify.pytest_gate import PytestGate
from harness.verify.pytest_runtime import base_blocker

BACKENDS = ["bwrap", "none"]

PROJECT = {
    "calc/__init__.py": "from toolz import double\n\n\ndef quadruple(x):\n    return double(x) * 2\n",
    "tests/test_calc.py": "from calc import quadruple\n\n\ndef test_quadruple():\n"
    "    assert quadruple(3) == 12\n",
}
NO_TOOLZ = "(ModuleNotFoundError: No module named 'toolz')"


def make_project(root: Path, files: dict[str, str] = PROJECT) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def make_venv(folder: Path, *, with_pytest_stub: bool = False) -> PythonEnv:
    """A real venv at ``folder`` with a local ``toolz`` in its site-packages (no network)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    code = "import sysconfig; print(sysconfig.get_path('purelib'))"
    site = Path(subprocess.run([python, "-c", code], check=True, capture_output=True,
                               text=True).stdout.strip())  # fmt: skip
    (site / "toolz").mkdir()
    (site / "toolz" / "__init__.py").write_text("def double(x):\n    return 2 * x\n")
    if with_pytest_stub:  # a project pytest of its own, which the gate must run
        (site / "pytest.py").write_text("import sys\nprint('project pytest')\nsys.exit(3)\n")
    env = PythonEnv.of_venv(folder, f".venv at {folder.parent}")
    assert env is not None
    return env


@pytest.fixture(scope="module")
def shared_venv(tmp_path_factory: pytest.TempPathFactory) -> PythonEnv:
    return make_venv(tmp_path_factory.mktemp("project") / ".venv")


@pytest.mark.parametrize("backend", BACKENDS)
def test_without_the_project_env_the_gate_cannot_collect_and_names_the_missing_module(
    tmp_path: Path, backend: str
) -> None:
    assert importlib.util.find_spec("toolz") is None  # the harness's environment lacks it
    project = make_project(tmp_path)

    report = PytestGate("-q tests", sandbox=Sandbox(backend)).check(project)

    assert not report.passed
    assert report.summary == (
        f"pytest: 1 error of 1 tests; could not collect tests/test_calc.py {NO_TOOLZ}"
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_with_the_project_env_the_gate_passes_with_the_harness_pytest(
    tmp_path: Path, backend: str, shared_venv: PythonEnv
) -> None:
    project = make_project(tmp_path)
    sandbox = Sandbox(backend, python_env=shared_venv)

    report = PytestGate("-q tests", sandbox=sandbox).check(project)

    assert report.passed, report.summary + report.output_tail
    assert report.summary == "pytest: 1 passed of 1 tests"
    found = sandbox.run(["python", "-c", "import sys, toolz; print(sys.prefix)"], cwd=project,
                        timeout=60)  # fmt: skip
    assert found.exit_code == 0, found.output
    assert found.output.strip() == str(shared_venv.prefix)


def test_the_project_env_is_read_only_to_commands(tmp_path: Path, shared_venv: PythonEnv) -> None:
    project = make_project(tmp_path)
    sandbox = Sandbox("bwrap", python_env=shared_venv)  # backend none makes nothing read-only
    target = shared_venv.prefix / "planted.py"

    result = sandbox.run(f"echo x > {target}", cwd=project, timeout=30)

    assert result.exit_code != 0
    assert not target.exists()
    assert sandbox.run(f"echo x > {project}/mine.txt", cwd=project, timeout=30).exit_code == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_project_env_with_its_own_pytest_runs_that_pytest(tmp_path: Path, backend: str) -> None:
    env = make_venv(tmp_path / "venv", with_pytest_stub=True)
    project = make_project(tmp_path / "project")

    report = PytestGate("-q tests", sandbox=Sandbox(backend, python_env=env)).check(project)

    assert not report.passed
    assert "project pytest" in report.output_tail
    assert report.exit_code == 3


def test_a_workspace_pytest_cannot_take_the_place_of_the_harness_pytest(
    tmp_path: Path, shared_venv: PythonEnv
) -> None:
    files = {**PROJECT, "pytest.py": "import sys\nsys.exit(0)\n"}
    project = make_project(tmp_path, files)

    report = PytestGate("-q tests", sandbox=Sandbox("none", python_env=shared_venv)).check(project)

    assert report.passed
    assert report.summary == "pytest: 1 passed of 1 tests"


def test_detection_prefers_the_active_venv_then_the_first_root_and_skips_the_harness_own(
    tmp_path: Path, shared_venv: PythonEnv
) -> None:
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    make_venv(repo / ".venv")
    active = str(shared_venv.prefix)

    found = detected_env([repo / "pkg", repo], {"VIRTUAL_ENV": active})
    assert found is not None
    assert (found.prefix, found.origin) == (shared_venv.prefix, "the active VIRTUAL_ENV")
    found = detected_env([repo / "pkg", repo], {})
    assert found is not None
    assert (found.prefix, found.origin) == (repo / ".venv", f".venv at {repo}")
    assert detected_env([repo / "pkg"], {}) is None
    assert detected_env([repo / "pkg"], {"VIRTUAL_ENV": sys.prefix}) is None  # the harness's own
    found = detected_env([repo / "pkg", repo], {"VIRTUAL_ENV": sys.prefix})
    assert found is not None
    assert found.prefix == repo / ".venv"
    (repo / ".venv" / "pyvenv.cfg").unlink()  # a folder named .venv that is no venv
    assert detected_env([repo], {}) is None


def test_a_missing_dependency_at_the_base_blocks_but_a_missing_project_module_does_not(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path)
    _, junit = PytestGate("-q tests", sandbox=Sandbox("none")).run(project)
    assert isinstance(junit, JUnitReport)

    assert base_blocker(junit, project) == (
        "cannot collect at the base commit: ModuleNotFoundError: toolz — "
        "is the project's environment set up? see [env]"
    )
    (project / "toolz").mkdir()  # the project holds a toolz of its own: the import is the bug
    assert base_blocker(junit, project) is None
