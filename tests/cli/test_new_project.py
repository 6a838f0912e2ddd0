"""A new user's project, end to end: ``harness init bugfix``, a commit, ``harness run``.

The project has no ``.gitignore`` of its own; the scripted agent runs pytest, fixes the code
with ``edit_file``, runs pytest again and submits. The run passes in round 1 and the round's
commit holds the fix alone: no byte code, no pytest cache.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_cli import harness
from tests.cli.test_examples import of_kind, read_events
from tests.conftest import git, make_repo, verdict_entry

pytestmark = pytest.mark.slow

WRONG_RESULT = {
    "calc/__init__.py": "def add(a, b):\n    return a - b\n",
    "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
}
IMPORT_ERROR = {
    "calc/__init__.py": "",
    "calc/helpers.py": "def normalize(text):\n    return text.strip().lower()\n",
    "tests/test_calc.py": (
        "from calc.helpers import normalise\n\n\n"
        "def test_normalise():\n    assert normalise(' Ab ') == 'ab'\n"
    ),
}
FIXES = {
    "wrong result": (WRONG_RESULT, "calc/__init__.py", "return a - b", "return a + b"),
    "import error": (IMPORT_ERROR, "calc/helpers.py", "def normalize(", "def normalise("),
}


def call(name: str, **arguments: str) -> dict[str, object]:
    return {"name": name, "arguments": arguments}


@pytest.mark.parametrize("bug", FIXES)
def test_a_new_project_passes_in_round_one(tmp_path: Path, bug: str) -> None:
    files, path, old, new = FIXES[bug]
    repo = make_repo(tmp_path / "project", files)
    assert not (repo / ".gitignore").exists()
    assert harness("init", "bugfix", cwd=repo).returncode == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "harness init")
    base = git(repo, "rev-parse", "HEAD")
    pytest_run = call("run_shell", command="python -m pytest -q tests")
    round_1 = [
        pytest_run,
        call("edit_file", path=path, old=old, new=new),
        pytest_run,
        call("submit", summary=f"fixed the {bug}"),
        verdict_entry(9, ["the fix is right"]),
    ]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"rounds": {"1": round_1}}))

    result = harness("run", "--quiet", "--model", f"scripted:{script}", cwd=repo)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "PASSED: round 1 passed every gate and the review" in result.stdout
    events = read_events(repo)
    assert [g["passed"] for g in of_kind(events, "gate_report")] == [True]
    branch = of_kind(events, "run_start")[0]["branch"]
    assert git(repo, "rev-list", "--count", f"{base}..{branch}") == "1"
    assert git(repo, "diff", "--name-only", base, branch) == path
    assert new in git(repo, "show", f"{branch}:{path}")
    tree = git(repo, "ls-tree", "-r", "--name-only", branch).split()
    assert [name for name in tree if "cache" in name or name.endswith(".pyc")] == []
