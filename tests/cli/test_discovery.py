"""``harness status``, ``runs`` and ``report`` find the same loops: a loop in a folder below
(``examples/bugfix``) keeps its runs in its own ``.harness/runs``, and all three find them."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_cli import harness
from tests.cli.test_cli_conventions import passing_loop


def test_runs_and_report_find_the_runs_of_loops_below_as_status_finds_the_loops(
    tmp_path: Path,
) -> None:
    passing_loop(tmp_path / "examples" / "hello")
    assert harness("run", "examples/hello", "--quiet", cwd=tmp_path).returncode == 0
    (run,) = (tmp_path / "examples" / "hello" / ".harness" / "runs").iterdir()

    status = harness("status", cwd=tmp_path)
    assert status.stdout.startswith("hello: passed, round 1")
    runs = harness("runs", cwd=tmp_path)
    assert runs.returncode == 0, runs.stderr
    (row,) = runs.stdout.strip().splitlines()[1:]
    assert row.startswith(run.name)
    assert " PASSED " in row
    report = harness("report", run.name, cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert report.stdout.startswith(f"run {run.name} · PASSED · 1/")


def test_an_unknown_run_names_every_folder_looked_in(tmp_path: Path) -> None:
    passing_loop(tmp_path / "examples" / "hello")
    assert harness("run", "examples/hello", "--quiet", cwd=tmp_path).returncode == 0
    report = harness("report", "nosuchrun", cwd=tmp_path)
    assert report.returncode == 2
    runs = tmp_path.resolve() / "examples" / "hello" / ".harness" / "runs"
    assert report.stderr == (
        f"harness: run: no run folder or run id 'nosuchrun' (looked in {runs})\n"
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    none = harness("runs", cwd=empty)
    assert none.stdout == "no runs under .harness/runs or the loops under .\n"
