"""When bwrap fails and commands run unsandboxed, every output and report of the run says so."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.cli.test_attempts_cli import _project
from tests.cli.test_cli import harness, write_loop
from tests.conftest import git, make_repo

FAILED_BWRAP = "bwrap: setting up uid map: Permission denied"
NOTICE = (
    "commands are not sandboxed: they run as the harness's user, with its files in reach "
    f"(bwrap does not work here ({FAILED_BWRAP}); user namespaces may be disabled)"
)


@pytest.fixture
def no_bwrap(tmp_path: Path) -> dict[str, str]:
    """The environment of a machine where bwrap is installed but fails (``auto`` falls back)."""
    folder = tmp_path / "fakebin"
    folder.mkdir()
    (folder / "bwrap").write_text(f"#!/bin/sh\necho '{FAILED_BWRAP}' >&2\nexit 1\n")
    (folder / "bwrap").chmod(0o755)
    return {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}


def test_a_run_says_it_in_its_verdict_escalation_and_reports(
    tmp_path: Path, no_bwrap: dict[str, str]
) -> None:
    project = make_repo(tmp_path / "project", {"README.md": "hi\n"})
    (project / "script.json").write_text(json.dumps(["done"]))
    write_loop(project, """\
        name = "fix"
        goal = "never"
        model = "scripted:script.json"
        max_iterations = 1
        [critic]
        enabled = false
        [[gates]]
        type = "command"
        cmd = "false"
        """)  # fmt: skip
    git(project, "add", "-A")
    git(project, "commit", "-qm", "loop")

    quiet = harness("run", "--quiet", "--restart", cwd=project, env=no_bwrap)
    run = harness("run", "--restart", cwd=project, env=no_bwrap)

    assert quiet.returncode == run.returncode == 3, run.stderr  # escalated
    assert f"note: {NOTICE}" in quiet.stdout.splitlines()  # quiet: the verdict and the notice
    assert f"note: {NOTICE}" in run.stdout.splitlines()
    report_path = Path(re.findall(r"escalation report: (\S+)", run.stdout)[0])
    assert f"**Not sandboxed:** {NOTICE}" in report_path.read_text().splitlines()
    listed = harness("runs", cwd=project).stdout.splitlines()[1].split()[0]
    text = harness("report", listed, "--html", str(tmp_path / "r.html"), cwd=project)
    notes = [line for line in text.stdout.splitlines() if line.startswith("note: ")]
    assert len(notes) == 3, text.stdout  # the run's warning, the scripted model, the restart's
    assert [note for note in notes if note.endswith(NOTICE)] == notes[:1], text.stdout
    assert notes[1].startswith("note: the model is scripted (scripted:"), text.stdout
    assert notes[2].startswith("note: the earlier run's branch harness/fix."), text.stdout
    assert NOTICE.replace("'", "&#x27;") + "<" in (tmp_path / "r.html").read_text()


def test_attempts_say_it_on_the_terminal_and_in_their_summary(
    tmp_path: Path, no_bwrap: dict[str, str]
) -> None:
    project = _project(tmp_path)

    result = harness("run", "--attempts", "2", cwd=project, env=no_bwrap)

    assert result.returncode == 0, result.stderr
    assert f"note: {NOTICE}" in result.stderr.splitlines()
    summary = json.loads((project / ".harness" / "attempts" / "fix" / "summary.json").read_text())
    assert summary["unsandboxed"] == [NOTICE]
    assert [t["unsandboxed"] for t in summary["tasks"]] == [NOTICE, NOTICE]
    report = harness("report", ".harness/attempts/fix", cwd=project)
    assert f"note: 2 of 2 tasks: {NOTICE}" in report.stdout.splitlines()


def test_a_batch_says_it_for_its_tasks_and_a_sandboxed_one_says_nothing(
    tmp_path: Path, no_bwrap: dict[str, str]
) -> None:
    _project(tmp_path)
    lines = [json.dumps({"name": f"task-{i}", "loop": "project/loop.toml"}) for i in (1, 2)]
    (tmp_path / "tasks.jsonl").write_text("\n".join(lines) + "\n")

    bare = harness("batch", "tasks.jsonl", "--out", "bare", cwd=tmp_path, env=no_bwrap)
    boxed = harness("batch", "tasks.jsonl", "--out", "boxed", cwd=tmp_path)

    assert bare.returncode == boxed.returncode == 0, bare.stderr
    assert f"note: 2 of 2 tasks: {NOTICE}" in bare.stdout.splitlines()
    summary = json.loads((tmp_path / "bare" / "summary.json").read_text())
    assert summary["unsandboxed"] == [NOTICE]
    html = tmp_path / "bare.html"
    harness("report", "bare", "--html", str(html), cwd=tmp_path)
    assert NOTICE.replace("'", "&#x27;") in html.read_text()
    assert "not sandboxed" not in boxed.stdout  # bwrap works here: nothing to say
    assert json.loads((tmp_path / "boxed" / "summary.json").read_text())["unsandboxed"] == []
