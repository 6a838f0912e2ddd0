"""Run reports: the summary, text, HTML (rendered in headless Chromium) and the run listing."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import tempfile
from dataclasses import replace
from datetime import timedelta
from html import escape
from pathlib import Path

import pytest

from harness.core.errors import ConfigError
from harness.core.redact import Redactor
from harness.observe.events import EventLog
from harness.observe.live import format_cost, format_tokens
from harness.observe.report import render_runs, render_text
from harness.observe.report_html import render_html
from harness.observe.run_summary import (
    RUNS_DIR,
    RunInfo,
    find_run,
    list_runs,
    load_run,
    round_failures,
    round_notes,
)
from tests.conftest import event
from tests.event_fixtures import START, SampleRun, emit_sample_run

SECRET = "sk-test-report-0123456789abcdef"
OUTCOMES = ["failed: pytest", "failed: critic 6.5/10", "failed: critic 7.5/10"]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND",
)  # fmt: skip


def _run(root: Path, run_id: str = "run-a", **kwargs: object) -> tuple[Path, SampleRun]:
    run_dir = root / RUNS_DIR / run_id
    log = EventLog(run_dir / "events.jsonl", run_id=run_id,
                   redactor=Redactor(env={"OPENAI_API_KEY": SECRET}))  # fmt: skip
    sample = emit_sample_run(log, run_id=run_id, tool_output_note=f"key={SECRET}", **kwargs)  # type: ignore[arg-type]
    return run_dir, sample


def test_summary_has_rounds_usage_gates_verdicts_compactions_and_escalation(tmp_path: Path) -> None:
    run_dir, sample = _run(tmp_path)
    summary = load_run(run_dir)
    assert (summary.outcome, summary.passed, summary.goal) == (
        "MAX_ITERATIONS",
        False,
        "Fix the failing test in calc.py",
    )
    assert summary.usage.total_tokens == sample.usage.prompt_tokens + sample.usage.completion_tokens
    assert [r.usage.prompt_tokens for r in summary.rounds] == [
        t.prompt_tokens for t in sample.per_round
    ]
    assert [r.usage.cost_usd for r in summary.rounds] == pytest.approx(
        [t.cost_usd for t in sample.per_round]
    )
    assert [len(r.steps) for r in summary.rounds] == [3, 3, 3]
    assert [r.outcome for r in summary.rounds] == OUTCOMES
    assert [r.verdict.score if r.verdict else None for r in summary.rounds] == [None, 6.5, 7.5]
    assert summary.rounds[0].gates[0].failures == ["test_add", "test_sub", "test_div_zero"]
    assert [len(r.compactions) for r in summary.rounds] == [0, 1, 0]
    assert summary.escalation is not None
    assert summary.escalation.report_path == "progress/fix-calc.escalation.md"


def test_an_unfinished_run_is_incomplete_and_totals_its_model_calls(tmp_path: Path) -> None:
    run_dir, sample = _run(tmp_path)
    events = run_dir / "events.jsonl"
    lines = events.read_text().splitlines()
    kept = [
        line for line in lines if '"kind": "run_end"' not in line and '"kind": "stop"' not in line
    ]
    events.write_text("\n".join(kept[:-3]) + "\n" + kept[-3][:30])
    summary = load_run(run_dir)
    assert summary.outcome == "incomplete"
    assert summary.usage.calls == sample.usage.calls
    assert summary.rounds[-1].outcome == "incomplete"


def test_text_report_has_per_round_figures_and_the_escalation(tmp_path: Path) -> None:
    run_dir, sample = _run(tmp_path)
    text = render_text(load_run(run_dir))
    rows = [
        re.split(r"\s{2,}", line.strip())
        for line in text.splitlines()
        if re.match(r"\s+\d\s", line)
    ]
    assert [row[:5] for row in rows] == [
        [str(n), outcome, "3", format_tokens(t.prompt_tokens + t.completion_tokens), format_cost(t.cost_usd)]
        for n, outcome, t in zip((1, 2, 3), OUTCOMES, sample.per_round, strict=True)
    ]  # fmt: skip
    assert "gate pytest failed (3 failed, 9 passed): test_add, test_sub, test_div_zero" in text
    assert "compaction (summarize): 52.0k → 11.0k tokens" in text
    assert "escalation: MAX_ITERATIONS\n  report: progress/fix-calc.escalation.md" in text
    assert f"{sample.usage.prompt_tokens + sample.usage.completion_tokens:,} tokens" in text
    assert SECRET not in text


def test_html_report_is_self_contained_with_charts_and_escalation(tmp_path: Path) -> None:
    run_dir, sample = _run(tmp_path)
    html = render_html(load_run(run_dir))
    assert html.startswith("<!DOCTYPE html>")
    assert not re.search(r"https?:|<script|<link|<img|<iframe|url\(|@import", html, re.IGNORECASE)
    assert html.count("<svg") == 4  # tokens, cost, critic score, timeline
    for tally in sample.per_round:
        assert format_tokens(tally.prompt_tokens + tally.completion_tokens) in html
        assert format_cost(tally.cost_usd) in html
    assert re.findall(r">(\d\.5)</text>", html) == ["6.5", "7.5"]
    assert html.count("<polygon") == 1  # the compaction, on the timeline
    assert (
        '<td class="fail" title="3 failed, 9 passed; test_add; test_sub; test_div_zero">✗ (3 failing)</td>'
        in html
    )
    assert '<div class="escalation">' in html
    assert "progress/fix-calc.escalation.md" in html
    assert SECRET not in html


def test_text_and_html_show_the_same_round_notes_and_gate_marks(tmp_path: Path) -> None:
    run_dir, _ = _run(tmp_path)
    summary = load_run(run_dir)
    first, second, last = summary.rounds
    assert round_notes(first) == [
        "gate pytest failed (3 failed, 9 passed): test_add, test_sub, test_div_zero"
    ]
    assert round_notes(second) == [
        "critic 6.5: division by zero unhandled",
        "fix: raise ZeroDivisionError in div()",
        "compaction (summarize): 52.0k → 11.0k tokens",
    ]
    assert round_failures(second) == round_notes(second)[:2]
    text, html = render_text(summary), render_html(summary)
    for r in summary.rounds:
        for note in round_notes(r):
            assert f"  {note}\n" in text
            assert escape(note) in html
    escalation = html[html.index('<div class="escalation">') :]
    assert round_failures(last) == [
        "critic 7.5: division by zero unhandled",
        "fix: raise ZeroDivisionError in div()",
    ]
    assert all(f"<li>{escape(note)}</li>" in escalation for note in round_failures(last))
    assert "pytest ✗ (3 failing), ruff ✓" in text


def test_html_report_of_a_passed_run_has_no_escalation(tmp_path: Path) -> None:
    run_dir, _ = _run(tmp_path, passes=True, rounds=2)
    html = render_html(load_run(run_dir))
    assert 'class="badge ok">PASSED' in html
    assert "Escalation" not in html


def test_html_report_shows_the_branch_the_threshold_and_why_the_passing_round_passed(
    tmp_path: Path,
) -> None:
    run_dir, _ = _run(tmp_path, passes=True, rounds=2)
    html = render_html(load_run(run_dir))
    assert "<br>branch <code>harness/fix-calc</code>" in html
    scores = html[html.index('aria-label="Critic score per round"') :]
    scores = scores[: scores.index("</svg>")]
    assert scores.count('class="threshold"') == 1
    assert ">threshold 8</text>" in scores
    y_of_8 = 172 - 8 * (172 - 28) / 10  # the score chart's scale: 0 at y 172, 10 at y 28
    assert f'y1="{y_of_8:.1f}" x2="440" y2="{y_of_8:.1f}" stroke="#555"' in scores
    last_row = html[html.rindex("<tr><td>2</td>") :]
    assert "<td>critic 9: fix is minimal" in last_row  # the passing round's reason
    first_row = html[html.index("<tr><td>1</td>") : html.index("<tr><td>2</td>")]
    assert "fix is minimal" not in first_row


def test_html_report_draws_no_cost_chart_when_every_round_cost_nothing(tmp_path: Path) -> None:
    run_dir, _ = _run(tmp_path, passes=True, rounds=2)
    summary = load_run(run_dir)
    assert 'aria-label="Cost per round"' in render_html(summary)
    free = [replace(r, usage=replace(r.usage, cost_usd=0.0)) for r in summary.rounds]
    html = render_html(replace(summary, rounds=tuple(free)))
    assert 'aria-label="Cost per round"' not in html
    assert 'aria-label="Tokens per round"' in html
    assert 'aria-label="Critic score per round"' in html
    unjudged = [replace(r, verdict=None) for r in free]  # no verdict: no threshold either
    assert 'class="threshold"' not in render_html(replace(summary, rounds=tuple(unjudged)))


def test_list_runs_newest_first_with_outcomes(tmp_path: Path) -> None:
    _run(tmp_path, "old", start=START - timedelta(days=2))
    _run(tmp_path, "newest", start=START + timedelta(hours=1), passes=True, rounds=2)
    _run(tmp_path, "middle", start=START)
    (tmp_path / RUNS_DIR / "not-a-run").mkdir()
    runs = list_runs(tmp_path / RUNS_DIR)
    assert [(r.run_id, r.outcome, r.rounds) for r in runs] == [
        ("newest", "PASSED", 2),
        ("middle", "MAX_ITERATIONS", 3),
        ("old", "MAX_ITERATIONS", 3),
    ]
    table = render_runs(runs).splitlines()
    assert table[1].split()[:3] == ["newest", "2026-03-01", "10:30"]
    assert list_runs(tmp_path / "nowhere") == []
    assert render_runs([]) == "no runs yet"


def test_the_runs_table_sizes_its_columns_to_their_cells_within_100_characters() -> None:
    def info(run_id: str, outcome: str, goal: str) -> RunInfo:
        return RunInfo(run_id, Path(run_id), START, outcome, outcome == "PASSED", 2, 0.0123, goal)

    runs = [
        info("9c4d2e7a", "PASSED", "Make the tests pass."),
        info("01e75cda", "MAX_ITERATIONS", "Write draft.md from brief.md and facts.md. " * 4),
    ]
    assert render_runs(runs).split("\n") == [
        "run       started           outcome         rounds    cost  goal",
        "9c4d2e7a  2026-03-01 09:30  PASSED               2  $0.012  Make the tests pass.",
        "01e75cda  2026-03-01 09:30  MAX_ITERATIONS       2  $0.012  Write draft.md from brief.md and facts.…",
    ]  # fmt: skip
    assert max(len(line) for line in render_runs(runs).split("\n")) == 100
    of_loops = [replace(runs[0], loop="bugfix"), replace(runs[1], loop="content\x1b[2J")]
    assert render_runs(of_loops).split("\n") == [
        "run       loop     started           outcome         rounds    cost  goal",
        "9c4d2e7a  bugfix   2026-03-01 09:30  PASSED               2  $0.012  Make the tests pass.",
        "01e75cda  content  2026-03-01 09:30  MAX_ITERATIONS       2  $0.012  Write draft.md from brief.md a…",
    ]  # fmt: skip
    one_loop = [replace(run, loop="bugfix") for run in runs]  # or only one loop named
    assert render_runs(one_loop) == render_runs(runs[:1] + one_loop[1:]) == render_runs(runs)


def test_an_unreadable_run_is_listed_as_such_and_its_report_names_the_line(
    tmp_path: Path,
) -> None:
    _run(tmp_path, "good")
    broken, _ = _run(tmp_path, "broken", start=START + timedelta(hours=1))
    lines = (broken / "events.jsonl").read_text().splitlines()
    lines[2] = "not json"
    (broken / "events.jsonl").write_text("\n".join(lines) + "\n")
    runs = list_runs(tmp_path / RUNS_DIR)
    assert [(r.run_id, r.outcome, r.rounds) for r in runs] == [
        ("good", "MAX_ITERATIONS", 3),
        ("broken", "unreadable", 0),
    ]
    assert render_runs(runs).splitlines()[2].split()[:3] == ["broken", "?", "unreadable"]
    with pytest.raises(ConfigError, match=r"broken/events.jsonl:3: not a valid event"):
        load_run(broken)


def test_find_run_by_folder_or_id(tmp_path: Path) -> None:
    run_dir, _ = _run(tmp_path, "run-7")
    assert find_run(run_dir) == run_dir
    assert find_run("run-7", root=tmp_path) == run_dir
    with pytest.raises(ConfigError, match="run-8"):
        find_run("run-8", root=tmp_path)


def chromium_render(
    html_file: Path, png_file: Path, *, width: int = 1000, height: int = 1800
) -> list[str]:
    """Screenshot ``html_file`` with headless Chromium; return what the page logged to its console."""
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run(
            [str(CHROMIUM), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr",
             "--v=0", f"--window-size={width},{height}", f"--screenshot={png_file}", html_file.as_uri()],
            capture_output=True, text=True, timeout=120, cwd=profile,
        )  # fmt: skip
    assert png_file.is_file(), f"chromium wrote no screenshot: {done.stderr[-2000:]}"
    return [line for line in done.stderr.splitlines() if ":CONSOLE" in line]


def chromium_dom(html_file: Path) -> str:
    """The page's DOM as Chromium parsed it."""
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run(
            [str(CHROMIUM), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom", html_file.as_uri()],
            capture_output=True, text=True, timeout=120, cwd=profile, check=True,
        )  # fmt: skip
    return done.stdout


def _png_size(png_file: Path) -> tuple[int, int]:
    header = png_file.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", header[16:24])
    return width, height


needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists() or shutil.which("chromium") is None,
    reason="headless Chromium is not installed (/usr/bin/chromium; Debian package 'chromium')",
)


@needs_chromium
def test_html_report_renders_in_headless_chromium_without_console_errors(tmp_path: Path) -> None:
    run_dir, _ = _run(tmp_path)
    page = tmp_path / "report.html"
    page.write_text(render_html(load_run(run_dir)), encoding="utf-8")
    shot = tmp_path / "report.png"
    assert chromium_render(page, shot) == []
    assert _png_size(shot) == (1000, 1800)
    assert shot.stat().st_size > 40_000  # a blank page is about 3 kB
    dom = chromium_dom(page)
    html = page.read_text(encoding="utf-8")
    for element in ("<svg", "<rect", "<circle", "<polyline", "<polygon", "<table"):
        assert dom.count(element) == html.count(element) > 0
    assert "Tokens per round" in dom


@needs_chromium
def test_chromium_check_catches_console_errors(tmp_path: Path) -> None:
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><p>x</p><script>console.error('boom'); missing();</script>")
    errors = chromium_render(page, tmp_path / "broken.png", width=400, height=300)
    assert any('"boom"' in line for line in errors)
    assert any("ReferenceError" in line for line in errors)


def test_an_empty_critic_chart_says_why_it_is_empty() -> None:
    from harness.observe.charts import line_chart

    empty = line_chart(["1", "2"], [None, None], title="Critic score per round", y_max=10,
                       color="#e15759", empty="no critic verdict")  # fmt: skip
    assert 'class="empty">no critic verdict</text>' in empty
    drawn = line_chart(["1", "2"], [None, 7.0], title="Critic score per round", y_max=10,
                       color="#e15759", empty="no critic verdict")  # fmt: skip
    assert "no critic verdict" not in drawn


def test_each_timeline_band_says_how_long_its_round_took() -> None:
    from harness.observe.charts import TimelineRow, timeline

    rows = [
        TimelineRow("round 1", 0.0, 3.7, False, []),
        TimelineRow("round 2", 3.7, 3.73, False, []),
    ]
    svg = timeline(rows, title="t", total=3.8, fmt_time=lambda s: f"{s:.0f}")
    labels = re.findall(r'class="duration">([^<]*)</text>', svg)
    assert labels == ["3.7 s", "0.03 s"]  # the sliver of round 2 is still readable


def test_agent_text_in_the_text_reports_comes_out_inert(tmp_path: Path) -> None:
    from tests.core.test_text import ATTACK

    run_dir = tmp_path / RUNS_DIR / "run-x"
    log = EventLog(run_dir / "events.jsonl", run_id="run-x", redactor=Redactor(env={}))
    log.emit(event("run_start", goal=ATTACK, model="m", max_iterations=1, workspace="."))
    log.emit(event("stop", reason="ERROR", message=ATTACK))
    log.emit(event("run_end", stop_reason="ERROR", passed=False, iterations=0, duration=1.0))
    text = render_text(load_run(run_dir))
    table = render_runs(list_runs(tmp_path / RUNS_DIR))
    for shown in (text, table):
        for control in ("\x1b", "\x07", "\x9b", "\r"):
            assert control not in shown
    assert "goal: all good PASSED2Jdone\n" in text
    assert "stop: ERROR — all good PASSED2Jdone\n" in text
    assert table.rstrip().endswith("all good PASSED2Jdone")
