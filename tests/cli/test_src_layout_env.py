"""``harness run`` on a ``src/`` layout project: its own package is imported only once it is
installed in an environment. Without one the run stops before round 1, naming the package and
the Python the tests ran with; a ``venv/`` holding the install is found as a ``.venv/`` is."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.cli.test_examples import of_kind, read_events
from tests.cli.test_project_env import loop_toml, run
from tests.conftest import make_repo
from tests.verify.test_pytest_runtime import make_venv

SRC_LAYOUT = {
    "src/calc/__init__.py": "def quadruple(x):\n    return x + 4\n",
    "tests/test_calc.py": "from calc import quadruple\n\n\ndef test_quadruple():\n"
    "    assert quadruple(3) == 12\n",
    "loop.toml": loop_toml("none"),
    ".gitignore": "venv/\n.venv/\n.harness/\n",
}


def script(tmp_path: Path) -> str:
    fix = {"path": "src/calc/__init__.py", "old": "x + 4", "new": "x * 4"}
    round_1 = [{"name": "edit_file", "arguments": fix},
               {"name": "submit", "arguments": {"summary": "fixed"}}]  # fmt: skip
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"rounds": {"1": round_1}}))
    return f"scripted:{path}"


def test_a_src_package_that_cannot_be_imported_stops_the_run_naming_it_and_the_python(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "project", SRC_LAYOUT)

    code, out, err = run(repo, script(tmp_path))

    assert code == 2, out + err
    assert out.splitlines()[0] == (
        "ERROR: cannot collect at the base commit: ModuleNotFoundError: calc — the project's own "
        f"package (src/calc) cannot be imported by {sys.executable}: install the project in its "
        "environment (pip install -e . in its .venv or venv), or see [env]"
    )
    events = read_events(repo)
    assert of_kind(events, "round_start") == []
    notes = of_kind(events, "run_start")[0]["notes"]
    assert (
        f"the tests run with the harness's own Python, {sys.executable}: no project " in (notes[-1])
    )


def test_a_venv_folder_holding_the_install_is_found_and_the_fix_passes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "project", SRC_LAYOUT)
    env = make_venv(repo / "venv")
    code = "import sysconfig; print(sysconfig.get_path('purelib'))"
    site = subprocess.run([env.python, "-c", code], check=True, capture_output=True, text=True)
    Path(site.stdout.strip(), "calc.pth").write_text(f"{repo / 'src'}\n")  # as pip install -e .

    code_, out, err = run(repo, script(tmp_path))

    assert code_ == 0, out + err
    assert "PASSED: round 1" in out
    events = read_events(repo)
    assert [g["summary"] for g in of_kind(events, "gate_report")] == ["pytest: 1 passed of 1 tests"]
    notes = of_kind(events, "run_start")[0]["notes"]
    assert notes[-1] == (
        f"commands run in the project's Python environment (venv at {repo}): {env.python}"
    )
