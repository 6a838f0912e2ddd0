"""Real projects, as their users have them: twelve open-source repositories at a real bug.

Each case under ``cases/`` is an upstream repository at the parent of a real fix commit, with
the fix's own test added (so the upstream test shows the bug), and the fixed source files
(see ``make_case.py`` and ``README.md``). Each is made a git repository of its own (with the
project's own ``.gitignore``, where it has one); a project that needs packages of its own gets a ``.venv`` beside its code, made
as its user would (the wheels unpacked offline), which the harness must find and use.

For every case, through the CLI as a user runs it:

* a scripted agent that writes the upstream fix through the tools passes in round 1, and the
  run branch holds exactly the upstream fix;
* an agent that changes nothing escalates, with the upstream test named in the report.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict

from tests.cli.test_cli import harness
from tests.cli.test_examples import of_kind, read_events
from tests.conftest import git

HERE = Path(__file__).parent
CASES = sorted(path.name for path in (HERE / "cases").iterdir())
pytestmark = pytest.mark.slow


class Case(BaseModel):
    """``case.json``: where a case came from and what shows its bug."""

    model_config = ConfigDict(extra="forbid")
    repository: str
    fix_commit: str
    base_commit: str
    subject: str
    shape: str
    fixed: list[str]
    tests: list[str]
    environment: list[str] = []  # wheels the project's own .venv holds
    editable: str | None = (
        None  # a folder the .venv imports the project from (``pip install -e .``)
    )


def load(name: str) -> Case:
    return Case.model_validate_json((HERE / "cases" / name / "case.json").read_text())


def make_venv(project: Path, case: Case) -> None:
    """The project's ``.venv`` as its user made it, offline: the wheels of ``case.environment``
    unpacked into its site-packages as pip would, and an editable install's path file."""
    venv = project / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (site,) = venv.glob("lib/python3*/site-packages")
    for wheel in case.environment:
        with zipfile.ZipFile(HERE / "wheels" / wheel) as archive:
            archive.extractall(site)
    if case.editable:
        (site / "__editable__.project.pth").write_text(f"{project / case.editable}\n")


def checkout(name: str, case: Case, tmp_path: Path) -> Path:
    """The case's base as a fresh repository of one commit, with a loop.toml of its own."""
    project = tmp_path / name
    project.mkdir()
    with tarfile.open(HERE / "cases" / name / "base.tar.gz") as archive:
        archive.extractall(project, filter="data")
    gate_args = json.dumps(" ".join(case.tests))
    (project / "loop.toml").write_text(
        f'name = "{name}"\n'
        f'goal = "The test {case.tests[0]} fails. Fix the code, not the tests."\n'
        'model = "scripted:script.json"\n'
        "max_iterations = 1\n"
        "[[gates]]\n"
        'type = "pytest"\n'
        f"args = {gate_args}\n"
        "[critic]\n"
        "enabled = false\n"
    )
    git(project, "init", "-q", "-b", "main")
    git(project, "config", "user.email", "test@example.com")
    git(project, "config", "user.name", "Test")
    git(project, "add", "-A")
    git(project, "commit", "-qm", f"{case.repository} at {case.base_commit[:12]}")
    if case.environment or case.editable:
        make_venv(project, case)
    return project


def run(
    project: Path, rounds: dict[str, list[object]], tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"rounds": rounds}))
    return harness("run", "--quiet", "--model", f"scripted:{script}", cwd=project)


def show(project: Path, revision: str) -> bytes:
    return subprocess.run(
        ["git", "show", revision], cwd=project, check=True, capture_output=True
    ).stdout


def write_fix(name: str, case: Case) -> list[object]:
    fixed = HERE / "cases" / name / "fix"
    calls: list[object] = [
        {"name": "write_file", "arguments": {"path": path, "content": (fixed / path).read_text()}}
        for path in case.fixed
    ]
    return [*calls, {"name": "submit", "arguments": {"summary": case.subject}}]


@pytest.mark.parametrize("name", CASES)
def test_the_upstream_fix_passes_in_round_one(tmp_path: Path, name: str) -> None:
    case = load(name)
    project = checkout(name, case, tmp_path)
    base = git(project, "rev-parse", "HEAD")

    result = run(project, {"1": write_fix(name, case)}, tmp_path)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "PASSED: round 1" in result.stdout
    events = read_events(project)
    assert [(g["round"], g["passed"]) for g in of_kind(events, "gate_report")] == [(1, True)]
    branch = of_kind(events, "run_start")[0]["branch"]
    assert git(project, "diff", "--name-only", base, branch).split() == sorted(case.fixed)
    for path in case.fixed:
        upstream = (HERE / "cases" / name / "fix" / path).read_bytes()
        assert show(project, f"{branch}:{path}") == upstream


@pytest.mark.parametrize("name", CASES)
def test_an_agent_that_changes_nothing_escalates_naming_the_test(tmp_path: Path, name: str) -> None:
    case = load(name)
    project = checkout(name, case, tmp_path)
    nothing = [{"name": "submit", "arguments": {"summary": "nothing to change"}}]

    result = run(project, {"1": nothing}, tmp_path)

    assert result.returncode == 3, result.stdout + result.stderr
    events = read_events(project)
    assert [(g["round"], g["passed"]) for g in of_kind(events, "gate_report")] == [(1, False)]
    (escalation,) = of_kind(events, "escalation")
    assert escalation["reason"] == "MAX_ITERATIONS"
    assert case.tests[0] in Path(escalation["report_path"]).read_text()
