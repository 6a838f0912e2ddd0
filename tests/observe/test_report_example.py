"""`harness report` on a real run of the bug-fix example: text, HTML, and the page in Chromium.

The run and its report are made once for the module on each worker that runs its tests (both
tests only read them).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.cli.test_cli import harness
from tests.cli.test_examples import commit_copy, copy_example
from tests.observe.test_report import _png_size, chromium_dom, chromium_render, needs_chromium

pytestmark = pytest.mark.slow


class Reported(NamedTuple):
    example: Path
    run_id: str
    report: subprocess.CompletedProcess[str]
    """``harness report RUN --html PAGE``, as it ran."""
    page: Path


@pytest.fixture(scope="module")
def reported(tmp_path_factory: pytest.TempPathFactory) -> Reported:
    """A real run of the bug-fix example and its report (text and HTML page)."""
    tmp_path = tmp_path_factory.mktemp("report_example")
    example = copy_example("bugfix", tmp_path)
    commit_copy(example)
    # made before any test's own state folder: the module's, not the user's
    state = {"XDG_STATE_HOME": str(tmp_path_factory.mktemp("state"))}
    result = harness("run", "--quiet", str(example), cwd=tmp_path, env=state)
    assert result.returncode == 0, result.stderr
    (run_dir,) = (example / ".harness" / "runs").iterdir()
    page = tmp_path / "report.html"
    report = harness("report", run_dir.name, "--html", str(page), cwd=example)
    return Reported(example, run_dir.name, report, page)


def test_report_and_runs_commands_summarise_the_bugfix_run(reported: Reported) -> None:
    example, run_id, report, page = reported
    assert report.returncode == 0, report.stderr
    assert "PASSED" in report.stdout
    assert "pytest" in report.stdout
    html = page.read_text()
    assert "<svg" in html
    assert "http://" not in html
    assert "https://" not in html
    runs = harness("runs", cwd=example)
    assert runs.returncode == 0
    assert run_id in runs.stdout
    assert "PASSED" in runs.stdout
    events = [
        json.loads(line)
        for line in (example / ".harness" / "runs" / run_id / "events.jsonl").open()
    ]
    assert {e["kind"] for e in events} >= {"run_start", "model_call", "tool_call", "gate_report",
                                           "critic_verdict", "round_end", "run_end"}  # fmt: skip


@needs_chromium
def test_bugfix_report_renders_its_charts_in_headless_chromium(
    reported: Reported, tmp_path: Path
) -> None:
    assert reported.report.returncode == 0, reported.report.stderr
    page = reported.page
    shot = tmp_path / "bugfix-report.png"
    assert chromium_render(page, shot) == []  # no console errors
    assert _png_size(shot) == (1000, 1800)
    assert shot.stat().st_size > 40_000  # a blank page is about 3 kB
    dom = chromium_dom(page)
    assert "Tokens per round" in dom
    assert dom.count("<rect") > 2
