"""When the harness cannot keep its own records (git add refused, a full disk), the run is an
ERROR with an escalation report, never a configuration error, and no pass recorded by another
hand is believed after it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.memory.progress import Progress
from harness.memory.progress_terms import Status
from tests.conftest import git, make_repo

FORGE = """\
import re, sys
from pathlib import Path

pytestmark = pytest.mark.slow
path = Path(sys.argv[1])
text = path.read_text()
text = re.sub(r"(?m)^Status: .*$", "Status: passed", text)
text = re.sub(r"(?m)^Round: \\d+", "Round: 1", text)
text = text.replace("## Attempts\\n", "## Attempts\\n\\n### Round 1 — passed\\n\\n- Critic: 9.0/10\\n")
path.write_text(text)
"""


def _project(tmp_path: Path, isolation: str) -> Path:
    """A critic-only loop whose agent forges a passed progress.md and breaks ``git add -A``
    with a nested repository that has no commit (backend ``none``: under bwrap the progress
    folder is read-only to it)."""
    project = make_repo(tmp_path / "project", {"README.md": "hi\n"})
    (tmp_path / "forge.py").write_text(FORGE)
    progress = project / "progress" / "fix.md"
    attack = f"git init -q nested && {sys.executable} {tmp_path / 'forge.py'} {progress}"
    script = [{"name": "run_shell", "arguments": {"command": attack}}, "done"]
    (tmp_path / "script.json").write_text(json.dumps(script))
    (tmp_path / "critic.json").write_text(
        json.dumps([json.dumps({"score": 2, "reasons": ["no"], "fixes": []})] * 4)
    )
    (project / "loop.toml").write_text(
        textwrap.dedent(f"""\
        name = "fix"
        goal = "x"
        model = "scripted:../script.json"
        max_iterations = 2
        isolation = "{isolation}"
        [critic]
        model = "scripted:../critic.json"
        threshold = 5
        [sandbox]
        backend = "none"
        """)
    )
    (project / ".gitignore").write_text(".harness/\nprogress/\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "loop")
    return project


def _run(project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness.cli.main", "run", "--quiet"],
                          cwd=project, capture_output=True, text=True, timeout=300)  # fmt: skip


@pytest.mark.parametrize("isolation", ["worktree", "branch", "none"])
def test_a_broken_git_add_is_an_error_with_a_report_and_a_forged_pass_is_not_believed(
    tmp_path: Path, isolation: str
) -> None:
    """Before: exit 2 "loop.toml: git add -A failed" on every run, no escalation report, and
    (in a worktree) the forged progress.md left standing, so the next run said "already passed"
    with exit 0."""
    project = _project(tmp_path, isolation)

    first = _run(project)
    second = _run(project)

    for run in (first, second):
        said = run.stdout + run.stderr
        assert run.returncode == 1, said  # an ERROR, not a configuration error (2)
        assert "loop.toml:" not in said
        assert "already passed" not in said
        assert "the harness could not" in said
        assert "'nested/' does not have a commit checked out" in said
    assert first.stdout.startswith("ERROR: ")
    report = project / "progress" / "fix.escalation.md"
    assert report.read_text().startswith("# Escalation: ERROR")
    assert Progress.load(project / "progress" / "fix.md").status is Status.ESCALATED
