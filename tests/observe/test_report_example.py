"""`harness report` on a real run of the bug-fix example: text, HTML, and the page in Chromium."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_cli import harness
from tests.cli.test_examples import commit_copy, copy_example
from tests.observe.test_report import _png_size, chromium_dom, chromium_render, needs_chromium

pytestmark = pytest.mark.slow


def _bugfix_run(tmp_path: Path) -> tuple[Path, str]:
    example = copy_example("bugfix", tmp_path)
    commit_copy(example)
    result = harness("run", "--quiet", str(example), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (run_dir,) = (example / ".harness" / "runs").iterdir()
    return example, run_dir.name


def test_report_and_runs_commands_summarise_the_bugfix_run(tmp_path: Path) -> None:
    example, run_id = _bugfix_run(tmp_path)
    page = tmp_path / "report.html"
    report = harness("report", run_id, "--html", str(page), cwd=example)
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
def test_bugfix_report_renders_its_charts_in_headless_chromium(tmp_path: Path) -> None:
    example, run_id = _bugfix_run(tmp_path)
    page = tmp_path / "report.html"
    assert harness("report", run_id, "--html", str(page), cwd=example).returncode == 0
    shot = tmp_path / "bugfix-report.png"
    assert chromium_render(page, shot) == []  # no console errors
    assert _png_size(shot) == (1000, 1800)
    assert shot.stat().st_size > 40_000  # a blank page is about 3 kB
    dom = chromium_dom(page)
    assert "Tokens per round" in dom
    assert dom.count("<rect") > 2
