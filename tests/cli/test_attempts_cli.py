"""``harness run --attempts N`` and ``attempts = N`` in loop.toml."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.test_cli import harness, write_loop
from tests.conftest import git, make_repo, verdict_entry


def _project(tmp_path: Path, extra: str = "") -> Path:
    project = make_repo(tmp_path / "project", {"README.md": "hi\n"})
    (project / "script.json").write_text(
        json.dumps(
            [{"name": "write_file", "arguments": {"path": "out.txt", "content": "yes"}}, "done"]
        )
    )
    (project / "critic.json").write_text(json.dumps([verdict_entry(7)]))
    write_loop(
        project,
        f"""\
        name = "fix"
        goal = "out.txt says yes"
        model = "scripted:script.json"
        max_iterations = 1
        {extra}
        [critic]
        model = "scripted:critic.json"
        threshold = 5
        [[gates]]
        type = "command"
        cmd = "grep -qx yes out.txt"
        """,
    )
    git(project, "add", "-A")
    git(project, "commit", "-qm", "loop")
    return project


def summary_tasks(project: Path) -> list[dict[str, Any]]:
    summary = project / ".harness" / "attempts" / "fix" / "summary.json"
    tasks: list[dict[str, Any]] = json.loads(summary.read_text())["tasks"]
    return tasks


def test_attempts_in_loop_toml_run_each_on_its_own_branch_and_name_the_winner(
    tmp_path: Path,
) -> None:
    project = _project(tmp_path, "attempts = 3")
    result = harness("run", cwd=project)
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.startswith("attempt ")]
    assert len(lines) == 3
    assert all("PASSED, score 7" in line for line in lines)
    winners = [number for number, line in enumerate(lines, start=1) if line.endswith("<- winner")]
    assert len(winners) == 1  # equal scores: the fewest tokens win
    branches = [line.split("branch ")[1].split()[0] for line in lines]
    assert len(set(branches)) == 3
    for number, branch in enumerate(branches, start=1):
        assert branch.startswith(f"harness/fix-attempt-{number}.")
        assert git(project, "show", f"{branch}:out.txt") == "yes"
        assert (project / "progress" / f"fix-attempt-{number}.md").is_file()
    tokens = [t["prompt_tokens"] + t["completion_tokens"] for t in summary_tasks(project)]
    fewest = tokens.index(min(tokens)) + 1  # equal scores: the fewest tokens win, and it says so
    others = ", ".join(str(n) for n in (1, 2, 3) if n != fewest)
    level = ", ".join(str(n) for n in (1, 2, 3) if n != fewest and tokens[n - 1] == min(tokens))
    why = (  # attempts may spend the same tokens: then the lowest number wins, and it says so
        f"tied with attempt {level} on every measure (score 7, {min(tokens):,} tokens); "
        "the lowest-numbered attempt wins a tie"
        if level
        else f"tied on score 7 with attempt {others}; the fewest tokens ({min(tokens):,})"
    )
    assert result.stdout.splitlines()[3:] == [
        f"report: harness report {project.resolve() / '.harness' / 'attempts' / 'fix'}",
        f"winner: attempt {fewest}, on branch {branches[fewest - 1]}: {why}",
    ]
    assert "attempt 1: " not in result.stderr
    assert not (project / "progress" / "fix.md").exists()
    summary = json.loads((project / ".harness" / "attempts" / "fix" / "summary.json").read_text())
    assert summary["kind"] == "attempts"
    assert summary["winner"] == f"attempt-{winners[0]}"
    assert [(t["name"], t["status"], t["score"], t["branch"]) for t in summary["tasks"]] == [
        (f"attempt-{n}", "passed", 7, branches[n - 1]) for n in (1, 2, 3)
    ]
    report = harness("report", ".harness/attempts/fix", cwd=project)
    assert report.returncode == 0, report.stderr
    assert f"attempts · 3 tasks · 3 passed · winner attempt-{winners[0]}" in report.stdout


def test_the_attempts_flag_beats_the_file_and_bad_values_exit_2(tmp_path: Path) -> None:
    project = _project(tmp_path)
    result = harness("run", "--attempts", "2", cwd=project)
    assert result.returncode == 0, result.stderr
    assert sum(line.startswith("attempt ") for line in result.stdout.splitlines()) == 2
    as_json = harness("run", "--attempts", "2", "--restart", "--json", cwd=project)
    assert as_json.returncode == 0, as_json.stderr
    summary = json.loads(as_json.stdout)  # one JSON document, nothing else
    assert summary["kind"] == "attempts"
    assert [t["name"] for t in summary["tasks"]] == ["attempt-1", "attempt-2"]
    assert summary["winner"] in ("attempt-1", "attempt-2")
    bad = harness("run", "--attempts", "9", cwd=project)
    assert bad.returncode == 2
    assert "--attempts" in bad.stderr


def test_merge_with_attempts_is_refused_naming_the_field(tmp_path: Path) -> None:
    project = _project(tmp_path, "attempts = 2\nmerge = true")
    result = harness("run", cwd=project)
    assert result.returncode == 2
    assert "field 'merge'" in result.stderr


def test_with_a_reproduction_gate_the_attempts_vote_with_their_tests(tmp_path: Path) -> None:
    project = make_repo(tmp_path / "project", {"calc.py": "def add(a, b):\n    return a - b\n"})
    writes = [
        {"name": "write_file", "arguments": {"path": path, "content": content}}
        for path, content in [
            ("calc.py", "def add(a, b):\n    return a + b\n"),
            (
                "tests/test_add.py",
                "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
            ),
        ]
    ]
    reply = {"content": "", "tool_calls": writes}
    (project / "script.json").write_text(json.dumps([reply, "fixed, with its test"]))
    write_loop(
        project,
        """\
        name = "fix"
        goal = "add adds"
        model = "scripted:script.json"
        max_iterations = 1
        [critic]
        enabled = false
        [[gates]]
        type = "reproduction"
        """,
    )
    git(project, "add", "-A")
    git(project, "commit", "-qm", "loop")

    result = harness("run", "--attempts", "2", cwd=project)

    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.startswith("attempt ")]
    assert len(lines) == 2
    assert all(
        "PASSED, no score, passes 1 of 1 others' reproduction tests, " in line for line in lines
    )
    assert [(t["others_tests_passed"], t["others_tests"]) for t in summary_tasks(project)] == [
        (1, 1), (1, 1)
    ]  # fmt: skip
