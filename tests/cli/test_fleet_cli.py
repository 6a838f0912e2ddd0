"""``[fleet]`` in loop.toml: ``harness run`` runs a loop per subtask and synthesises what is kept."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_cli import harness, write_loop
from tests.conftest import git, make_repo


def _project(tmp_path: Path, fleet: str) -> Path:
    project = make_repo(tmp_path / "project", {"README.md": "hi\n"})
    (project / "script.json").write_text(
        json.dumps(
            [
                {
                    "name": "write_file",
                    "arguments": {"path": "report.md", "content": "FINDING: 42"},
                },
                "done",
            ]
        )
    )
    (project / "synth.json").write_text(json.dumps(["Both reports say 42."]))
    write_loop(
        project,
        f"""\
        name = "survey"
        goal = "find the answer"
        model = "scripted:script.json"
        max_iterations = 1
        [critic]
        enabled = false
        [[gates]]
        type = "command"
        cmd = "test -s report.md"
        {fleet}
        """,
    )
    git(project, "add", "-A")
    git(project, "commit", "-qm", "loop")
    return project


def test_a_fleet_in_loop_toml_runs_every_subtask_evaluates_its_branch_and_synthesises(
    tmp_path: Path,
) -> None:
    project = _project(
        tmp_path,
        """\
        [fleet]
        subtasks = ["look in the docs", "look in the code"]
        model = "scripted:synth.json"
        [[fleet.evaluate]]
        type = "command"
        cmd = "grep -q 'FINDING: 42' report.md"
        """,
    )
    result = harness("run", cwd=project)
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("task-")]
    assert [line.split(":")[0] for line in lines] == ["task-1", "task-2"]
    assert all("PASSED, kept, branch harness/survey-task-" in line for line in lines)
    assert result.stdout.strip() == "Both reports say 42."
    assert (project / "progress" / "survey.synthesis.md").read_text() == "Both reports say 42."
    for number in (1, 2):
        assert (project / "progress" / f"survey-task-{number}.md").is_file()
    assert "harness-evaluate" not in git(project, "worktree", "list")  # evaluation cleaned up


def test_an_evaluation_that_rejects_every_subtask_exits_3_without_a_synthesis(
    tmp_path: Path,
) -> None:
    project = _project(
        tmp_path,
        """\
        [fleet]
        subtasks = ["look in the docs"]
        model = "scripted:synth.json"
        [[fleet.evaluate]]
        type = "command"
        cmd = "grep -q 'FINDING: 43' report.md"
        """,
    )
    result = harness("run", cwd=project)
    assert result.returncode == 3, result.stderr
    assert "task-1: PASSED, passed, rejected by the evaluation" in result.stderr
    assert not (project / "progress" / "survey.synthesis.md").exists()


def test_a_fleet_with_both_subtasks_and_a_plan_is_refused_naming_the_field(tmp_path: Path) -> None:
    project = _project(tmp_path, '[fleet]\nsubtasks = ["a"]\nplan = true\n')
    result = harness("run", cwd=project)
    assert result.returncode == 2
    assert "field 'fleet'" in result.stderr


def _cited_project(tmp_path: Path, synthesis: list[str]) -> Path:
    """Each subtask writes findings whose quote is in sources/log.md; the loop checks citations."""
    project = make_repo(
        tmp_path / "project",
        {"README.md": "hi\n", "sources/log.md": "The light was first lit in 1851.\n"},
    )
    findings = '- C1: lit in 1851 [source: sources/log.md] "first lit in 1851"\n'
    (project / "script.json").write_text(
        json.dumps(
            [
                {"name": "write_file", "arguments": {"path": "findings.md", "content": findings}},
                "done",
            ]
        )
    )
    (project / "synth.json").write_text(json.dumps(synthesis))
    write_loop(
        project,
        """\
        name = "survey"
        goal = "when was it lit"
        model = "scripted:script.json"
        max_iterations = 1
        [critic]
        enabled = false
        [[gates]]
        type = "citations"
        file = "findings.md"
        sources = "sources"
        [fleet]
        subtasks = ["look in the log"]
        model = "scripted:synth.json"
        """,
    )
    git(project, "add", "-A")
    git(project, "commit", "-qm", "loop")
    return project


FABRICATED = 'Lit in 1852 [source: sources/log.md] "first lit in 1852".'
RIGHT = 'Lit in 1851 [source: sources/log.md] "first lit in 1851".'


def test_a_synthesis_with_a_fabricated_quote_fails_the_rounds_citations_gate(
    tmp_path: Path,
) -> None:
    project = _cited_project(tmp_path, [FABRICATED, FABRICATED])
    result = harness("run", cwd=project)
    assert result.returncode == 3, result.stderr
    assert "task-1: PASSED, kept" in result.stderr
    assert "synthesis failed citations: " in result.stderr
    assert 'line 1: quote not found in sources/log.md: "first lit in 1852"' in result.stderr
    assert result.stdout.strip() == FABRICATED
    assert (project / "progress" / "survey.synthesis.md").read_text() == FABRICATED


def test_a_synthesis_repaired_after_its_failed_check_passes(tmp_path: Path) -> None:
    project = _cited_project(tmp_path, [FABRICATED, RIGHT])
    result = harness("run", cwd=project)
    assert result.returncode == 0, result.stderr
    assert "synthesis failed" not in result.stderr
    assert result.stdout.strip() == RIGHT
    (synthesis_run,) = (project / ".harness" / "runs").glob("*-synthesis")
    kept = (synthesis_run / "sources" / "index.jsonl").read_text()
    assert '"url":"file:sources/log.md"' in kept  # the bytes the quote was checked against
