"""A research loop from loop.toml over the local web: citations and convergence gates, per round.

A scripted agent fetches pages (through redirects, a PDF among them), writes cited claims and
then leaves them alone: the loop passes once the claims are stable. One that fabricates a quote
fails its round naming the citation; one whose key claim rests on sources that disagree never
converges.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.assemble.build import build_gate, run_folder
from harness.assemble.launch import recorded_loop
from harness.core.errors import ConfigError
from harness.observe.report import render_text
from harness.observe.run_summary import load_run
from harness.research.archive import ARCHIVE_DIR, SourceArchive, source_id
from harness.research.claim_ledger import LEDGER_FILE, read_ledger
from harness.research.gate_config import CitationsGateConfig
from harness.spec import LoopSpec
from tests.cli.test_cli import harness, write_loop
from tests.conftest import git, make_repo
from tests.research_web import HISTORY, Web, serve_web

LOOP = """\
name = "bridge"
goal = "When did the Harran Bridge open, and how long is its main span? Cite every claim."
isolation = "none"
model = "scripted:author.json"
max_iterations = {rounds}

[web]
allow_domains = ["127.0.0.1"]
timeout = 10

[critic]
enabled = false

[[gates]]
type = "citations"
file = "findings.md"
min_sources = 2

[[gates]]
type = "convergence"
file = "findings.md"
stable_rounds = 1
min_sources = 2
"""


@pytest.fixture(scope="module")
def web() -> Iterator[Web]:
    with serve_web() as served:
        yield served


def findings(web: Web, span_source: str) -> str:
    a, b = web.gazette.url, web.archive.url
    return (
        "# The Harran Bridge\n\n"
        f'- C1 (key): It opened in 1887 [source: {a}/history.html] "opened on 14 May 1887" '
        f'[source: {b}/report.pdf] "The bridge opened to traffic in 1887"\n'
        f"- C2 (key): Its main span is 142 metres [source: {source_id(HISTORY)}] "
        f'"Its main span is 142 metres long" {span_source}\n'
    )


def write_script(folder: Path, web: Web, text: str, rounds: int) -> None:
    fetches = [
        {"name": "fetch_url", "arguments": {"url": url}}
        for url in (
            f"{web.gazette.url}/old/history",
            f"{web.archive.url}/go/report",
            f"{web.survey.url}/span-survey.html",
        )
    ]
    write = {"name": "write_file", "arguments": {"path": "findings.md", "content": text}}
    script = {"1": [{"content": "Reading.", "tool_calls": fetches}, write, "Written."]}
    for number in range(2, rounds + 1):
        script[str(number)] = ["The findings stand as they are."]
    (folder / "author.json").write_text(json.dumps({"rounds": script}))


def run(tmp_path: Path, web: Web, text: str, rounds: int):  # noqa: ANN201 - a RunResult
    write_script(tmp_path, web, text, rounds)
    write_loop(tmp_path, LOOP.format(rounds=rounds))
    return recorded_loop(LoopSpec.from_toml(tmp_path)).run()


def gates_of(result) -> list[list[tuple[str, bool]]]:  # noqa: ANN001
    return [[(g.name, g.passed) for g in r.gates] for r in result.rounds]


def test_claims_that_stop_changing_end_the_loop(tmp_path: Path, web: Web) -> None:
    agreed = f'[source: {web.archive.url}/go/report] "The main span measures 142 metres"'
    result = run(tmp_path, web, findings(web, agreed), rounds=4)
    assert result.passed
    assert gates_of(result) == [
        [("citations", True), ("convergence", False)],
        [("citations", True), ("convergence", True)],
    ]
    first = result.rounds[0].gates[1]
    assert first.summary == (
        "2 claims this round: +2 added (C1, C2), ~0 changed, -0 dropped; "
        "the claims are not yet settled: unchanged for 0 rounds, 1 needed"
    )
    assert result.rounds[1].gates[1].summary == (
        "2 claims this round: +0 added, ~0 changed, -0 dropped; settled for 1 rounds"
    )
    assert result.rounds[1].gates[1].notes == ""  # no contradiction to show the critic
    run_dir = run_folder(tmp_path, result.run_id)
    report = render_text(load_run(run_dir))  # what `harness report` prints
    assert "round 1:\n  gate convergence failed (2 claims this round: +2 added (C1, C2)," in report
    assert [e.moved for e in read_ledger(run_dir / LEDGER_FILE)] == [True, False]
    assert (run_dir / "contradictions.md").read_text() == "none\n"
    archived = SourceArchive(run_dir / ARCHIVE_DIR).records()
    assert [r.requested.rsplit("/", 1)[1] for r in archived] == [
        "history",
        "report",
        "span-survey.html",
    ]


def test_a_fabricated_quote_fails_the_round_naming_it(tmp_path: Path, web: Web) -> None:
    made_up = f'[source: {web.archive.url}/report.pdf] "The main span measures 148 metres"'
    result = run(tmp_path, web, findings(web, made_up), rounds=1)
    assert not result.passed
    [[citations]] = [r.gates for r in result.rounds]
    assert not citations.passed
    problem = f'- line 4: [{web.archive.url}/report.pdf] "The main span measures 148 metres": '
    assert citations.output_tail.startswith(problem + "quote not found in s-")
    assert citations.output_tail.endswith(f"({web.archive.url}/report.pdf)")
    assert citations.summary.startswith("1 problem(s) in 4 citations")


def test_a_loop_whose_sources_disagree_does_not_converge(tmp_path: Path, web: Web) -> None:
    disputed = f'[source: {web.survey.url}/span-survey.html] "measured the main span at 148 metres"'
    result = run(tmp_path, web, findings(web, disputed), rounds=3)
    assert not result.passed
    assert gates_of(result) == [[("citations", True), ("convergence", False)]] * 3
    last = result.rounds[-1].gates[1]
    assert last.summary == (
        "2 claims this round: +0 added, ~0 changed, -0 dropped; the sources of key claim C2 "
        "disagree; sources disagree on C2"
    )
    listed = (run_folder(tmp_path, result.run_id) / "contradictions.md").read_text()
    assert listed == last.notes  # for the person, as for the critic
    assert "the sources of key claim C2 disagree" in last.output_tail
    assert last.notes.startswith("Contradictions between sources:\n- C2: ")  # for the critic
    assert (
        f"- C2: {source_id(HISTORY)} ({web.gazette.url.removeprefix('http://')}) says "
        f'"Its main span is 142 metres long" but'
    ) in last.output_tail


def test_an_archived_run_replays_with_the_web_gone(tmp_path: Path) -> None:
    with serve_web() as gone:
        agreed = f'[source: {gone.archive.url}/go/report] "The main span measures 142 metres"'
        first = run(tmp_path, gone, findings(gone, agreed), rounds=2)
    assert first.passed
    archive = run_folder(tmp_path, first.run_id) / ARCHIVE_DIR
    loop = tmp_path / "loop.toml"
    replay = f'replay = "{archive.relative_to(tmp_path)}"\n'
    loop.write_text(loop.read_text().replace("timeout = 10\n", f"timeout = 10\n{replay}"))
    (tmp_path / "findings.md").unlink()
    (tmp_path / "progress").rename(tmp_path / "first-progress")  # a new run, not a resumed one
    again = recorded_loop(LoopSpec.from_toml(tmp_path)).run()
    assert again.passed
    assert gates_of(again) == gates_of(first)
    replayed = SourceArchive(run_folder(tmp_path, again.run_id) / ARCHIVE_DIR).records()
    assert [r.id for r in replayed] == [r.id for r in SourceArchive(archive).records()]


SEARCH_LOOP = """\
name = "finder"
goal = "find"
isolation = "none"
model = "scripted:author.json"
max_iterations = 1
[critic]
enabled = false
[[gates]]
type = "command"
cmd = "true"
[web.search]
"""


@pytest.mark.parametrize(
    ("search", "error"),
    [
        ('provider = "searxng"\nendpoint = "http://127.0.0.1:9/search"', None),
        ('provider = "searxng"', "web.search.endpoint: the searxng provider needs its endpoint"),
        ('provider = "bing"', "field 'web.search.provider'"),
        ('provider = "brave"\napi_key_env = "NO_SUCH_KEY_SET"', "NO_SUCH_KEY_SET is not set"),
    ],
)
def test_the_search_provider_is_chosen_in_loop_toml(
    tmp_path: Path, search: str, error: str | None
) -> None:
    (tmp_path / "author.json").write_text(json.dumps(["done"]))
    write_loop(tmp_path, SEARCH_LOOP + search + "\n")
    if error is not None:
        with pytest.raises(ConfigError, match=re.escape(error)):
            recorded_loop(LoopSpec.from_toml(tmp_path))
        return
    loop = recorded_loop(LoopSpec.from_toml(tmp_path))
    tools = {tool.name for tool in loop.settings.agent.toolbox}
    assert {"web_search", "read_source"} <= tools
    assert "fetch_url" not in tools


def test_a_research_gate_outside_a_run_is_refused(tmp_path: Path) -> None:
    config = CitationsGateConfig(type="citations", file="findings.md")
    with pytest.raises(
        ConfigError, match="a citations gate checks a run's sources; use it in gates"
    ):
        build_gate(config, tmp_path)  # as fleet.evaluate builds its gates


def test_a_fleets_synthesis_is_checked_against_the_sources_its_subtasks_fetched(
    tmp_path: Path, web: Web
) -> None:
    project = make_repo(tmp_path / "project", {"README.md": "hi\n"})
    agreed = f'[source: {web.archive.url}/go/report] "The main span measures 142 metres"'
    write_script(project, web, findings(web, agreed), rounds=2)
    span = f'[source: {source_id(HISTORY)}] "Its main span is 142 metres long"'
    opened = f'[source: {web.archive.url}/report.pdf] "The bridge opened to traffic in 1887"'
    altered = f"Opened 1887 {opened}; span 148 m {span.replace('142', '148')}."
    right = f"Opened 1887 {opened}; span 142 m {span}."
    (project / "synth.json").write_text(json.dumps([altered, right]))
    write_loop(
        project,
        LOOP.format(rounds=2)
        + '[fleet]\nsubtasks = ["find the dates"]\nmodel = "scripted:synth.json"\n',
    )
    git(project, "add", "-A")
    git(project, "commit", "-qm", "loop")
    result = harness("run", cwd=project)
    assert result.returncode == 0, result.stderr
    assert "task-1: PASSED, kept" in result.stderr
    assert result.stdout.strip() == right  # the altered quote was sent back, the right one kept
    (synthesis_run,) = (project / ".harness" / "runs").glob("*-synthesis")
    kept = SourceArchive(synthesis_run / ARCHIVE_DIR).records()
    assert [r.requested.rsplit("/", 1)[1] for r in kept] == [
        "history",
        "report",
        "span-survey.html",
    ]
