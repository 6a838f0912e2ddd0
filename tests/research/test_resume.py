"""A resumed research run keeps the earlier run's archive of sources and its claim ledger.

A run stopped at its round cap (or killed) after a round that fetched pages is resumed, with a
new run id, by a scripted agent that cites those pages without fetching them (the local web is
gone by then): its quotes check against the sources the earlier run archived, a fabricated one
still fails naming it, and the convergence stop counts stable rounds across the resume.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.assemble.build import run_folder
from harness.assemble.launch import recorded_loop
from harness.assemble.named_models import Overrides
from harness.core.event_schema import RoundStart, RunStart
from harness.core.stop import StopReason
from harness.observe.events import EVENTS_FILE, EventLog
from harness.outer.result import RunResult
from harness.research.archive import ARCHIVE_DIR, INDEX_FILE, SourceArchive, source_id
from harness.research.claim_ledger import LEDGER_FILE, parse_claims, read_ledger, record_claims
from harness.spec import LoopSpec
from tests.cli.test_cli import harness
from tests.conftest import make_repo
from tests.research_web import HISTORY, REPORT, Web, serve_web

LOOP = """\
name = "bridge"
goal = "When did the Harran Bridge open, and how long is its main span? Cite every claim."
isolation = "{isolation}"
model = "scripted:author.json"
max_iterations = 6
workspace = "{workspace}"

[web]
allow_domains = ["127.0.0.1"]
timeout = 10

[critic]
enabled = false

{killer}
[[gates]]
type = "citations"
file = "findings.md"
min_sources = 2

[[gates]]
type = "convergence"
file = "findings.md"
stable_rounds = {stable}
min_sources = 2
"""

KILLER = """
[[gates]]
type = "python"
name = "killer"
target = "killer:check"
"""

KILLER_MODULE = """\
import os
import signal
from pathlib import Path


def check(workspace):
    once = Path(__file__).parent / "killed-once"
    if (Path(workspace) / "kill-me").exists() and not once.exists():
        once.write_text("")
        os.kill(os.getpid(), signal.SIGKILL)  # the harness dies mid-round, as in a crash
    return True
"""

IDLE = ["The findings stand as they are."]


@pytest.fixture(scope="module")
def web() -> Iterator[Web]:
    with serve_web() as served:
        yield served


def findings(web: Web, *, span: str = "142", quoted: str = "142", wording: str = "") -> str:
    a, b = web.gazette.url, web.archive.url
    return (
        "# The Harran Bridge\n\n"
        f'- C1 (key): It opened in 1887 [source: {a}/history.html] "opened on 14 May 1887" '
        f'[source: {b}/report.pdf] "The bridge opened to traffic in 1887"\n'
        f"- C2 (key): Its main span is {span} metres{wording} [source: {source_id(HISTORY)}] "
        f'"Its main span is 142 metres long" [source: {b}/go/report] '
        f'"The main span measures {quoted} metres"\n'
    )


def fetch(web: Web) -> dict[str, object]:
    urls = [f"{web.gazette.url}/old/history", f"{web.archive.url}/go/report"]
    calls = [{"name": "fetch_url", "arguments": {"url": url}} for url in urls]
    return {"content": "Reading.", "tool_calls": calls}


def write(text: str) -> dict[str, object]:
    return {"name": "write_file", "arguments": {"path": "findings.md", "content": text}}


def project(
    folder: Path,
    rounds: dict[int, list[object]],
    *,
    stable: int = 1,
    isolation: str = "none",
    killer: bool = False,
) -> Path:
    """A research loop in ``folder`` whose scripted agent plays ``rounds`` (by round number)."""
    files = {
        "loop.toml": LOOP.format(
            isolation=isolation,
            stable=stable,
            killer=KILLER if killer else "",
            workspace="work" if killer else ".",  # a python gate's module lies outside it
        ),
        "author.json": json.dumps({"rounds": {str(n): e for n, e in rounds.items()}}),
        ".gitignore": ".harness/\nprogress/\n",
    }
    if killer:
        files["killer.py"] = KILLER_MODULE
    if isolation != "none":
        return make_repo(folder, files)
    (folder / "work").mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def play(root: Path, cap: int, **overrides: object) -> RunResult:
    """The loop in ``root`` run (or resumed) up to round ``cap``."""
    chosen = Overrides(max_iterations=cap, **overrides)  # type: ignore[arg-type]
    return recorded_loop(LoopSpec.from_toml(root), overrides=chosen).run()


def gates_of(result: RunResult) -> list[list[tuple[str, bool]]]:
    return [[(g.name, g.passed) for g in r.gates] for r in result.rounds]


def fetches(root: Path, run_id: str) -> list[tuple[str, str, str, str]]:
    archive = SourceArchive(run_folder(root, run_id) / ARCHIVE_DIR)
    return [(r.id, r.url, r.requested, r.fetched_at) for r in archive.records()]


def test_a_resumed_run_cites_what_the_earlier_run_fetched_without_fetching_it(
    tmp_path: Path,
) -> None:
    with serve_web() as gone:  # the web is there for the first run only
        rounds = {1: [fetch(gone), "Fetched."], 2: [write(findings(gone)), "Written."], 3: IDLE}
        root = project(tmp_path / "p", rounds)
        first = play(root, cap=1)
        assert first.stop_reason is StopReason.MAX_ITERATIONS
        assert gates_of(first) == [[("citations", False)]]  # it fetched, but wrote nothing
        fetched = fetches(root, first.run_id)
        assert len(fetched) == 2
    resumed = play(root, cap=3)
    assert resumed.run_id != first.run_id
    assert resumed.first_round == 2
    assert gates_of(resumed) == [
        [("citations", True), ("convergence", False)],
        [("citations", True), ("convergence", True)],
    ]
    assert resumed.passed
    assert fetches(root, resumed.run_id) == fetched  # kept as recorded: the times of the fetches


def test_a_fabricated_quote_of_a_source_fetched_before_the_resume_fails_naming_it(
    tmp_path: Path, web: Web
) -> None:
    made_up = findings(web, span="148", quoted="148")
    root = project(tmp_path / "p", {1: [fetch(web), "Fetched."], 2: [write(made_up), "Written."]})
    play(root, cap=1)
    resumed = play(root, cap=2)
    [[citations]] = [r.gates for r in resumed.rounds]
    assert not citations.passed
    assert citations.output_tail == (
        f'- line 4: [{web.archive.url}/go/report] "The main span measures 148 metres": '
        f"quote not found in {source_id(REPORT)} ({web.archive.url}/report.pdf)"
    )  # the other three quotes, of the same sources, were found: nothing is "never fetched"


@pytest.mark.parametrize("settled", [True, False])
def test_stable_rounds_are_counted_across_the_resume(
    tmp_path: Path, web: Web, settled: bool
) -> None:
    third = IDLE if settled else [write(findings(web, wording=", end to end")), "Reworded."]
    rounds = {1: [fetch(web), write(findings(web)), "Written."], 2: IDLE, 3: third}
    root = project(tmp_path / "p", rounds, stable=2)
    first = play(root, cap=2)
    assert gates_of(first) == [[("citations", True), ("convergence", False)]] * 2
    assert first.rounds[1].gates[1].summary.endswith("unchanged for 1 rounds, 2 needed")
    resumed = play(root, cap=3)
    [[citations, convergence]] = [r.gates for r in resumed.rounds]
    assert citations.passed
    assert resumed.passed is settled
    assert convergence.passed is settled
    if settled:  # rounds 2 and 3 moved no claim: one before the resume, one after
        assert convergence.summary == (
            "2 claims this round: +0 added, ~0 changed, -0 dropped; settled for 2 rounds"
        )
    else:
        assert convergence.summary == (
            "2 claims this round: +0 added, ~1 changed (C2), -0 dropped; "
            "the claims are not yet settled: unchanged for 0 rounds, 2 needed"
        )
    ledger = read_ledger(run_folder(root, resumed.run_id) / LEDGER_FILE)
    assert [e.moved for e in ledger] == [True, False, not settled]


def test_the_entry_of_a_round_cut_short_is_not_carried(tmp_path: Path, web: Web) -> None:
    rounds = {1: [fetch(web), write(findings(web)), "Written."], 2: IDLE, 3: IDLE}
    root = project(tmp_path / "p", rounds, stable=3)
    first = play(root, cap=2)
    earlier = run_folder(root, first.run_id)
    # Round 3 begins and records its claims, then the process dies before the round is saved.
    EventLog(earlier / EVENTS_FILE, run_id=first.run_id).emit(RoundStart(round=3, max_iterations=3))
    record_claims(earlier / LEDGER_FILE, parse_claims(findings(web)))
    assert len(read_ledger(earlier / LEDGER_FILE)) == 3
    resumed = play(root, cap=3)  # round 3 again: its claims are unchanged for 2 rounds, not 3
    [[_, convergence]] = [r.gates for r in resumed.rounds]
    assert not resumed.passed
    assert convergence.summary.endswith(
        "the claims are not yet settled: unchanged for 2 rounds, 3 needed"
    )
    assert len(read_ledger(run_folder(root, resumed.run_id) / LEDGER_FILE)) == 3


def test_a_killed_run_is_resumed_with_its_sources(tmp_path: Path, web: Web) -> None:
    kill = {"name": "write_file", "arguments": {"path": "kill-me", "content": "now"}}
    rounds = {1: [fetch(web), "Fetched."], 2: [write(findings(web)), kill, "Written."], 3: IDLE}
    root = project(tmp_path / "p", rounds, killer=True)
    killed = harness("run", "--max-iterations", "3", cwd=root)
    assert killed.returncode == -signal.SIGKILL, killed.stderr  # in round 2's checks
    (killed_run,) = (root / ".harness" / "runs").iterdir()
    fetched = fetches(root, killed_run.name)
    assert len(fetched) == 2
    resumed = play(root, cap=3)  # in this process: only the killed run needs one of its own
    assert gates_of(resumed) == [
        [("killer", True), ("citations", True), ("convergence", False)],
        [("killer", True), ("citations", True), ("convergence", True)],
    ]
    assert resumed.first_round == 2  # round 2, cut short, is played again
    assert fetches(root, resumed.run_id) == fetched
    ledger = read_ledger(run_folder(root, resumed.run_id) / LEDGER_FILE)
    assert [e.moved for e in ledger] == [True, False]


def test_chained_resumes_carry_through_the_latest_earlier_run(tmp_path: Path, web: Web) -> None:
    rounds = {1: [fetch(web), "Fetched."], 2: [write(findings(web)), "Written."], 3: IDLE}
    root = project(tmp_path / "p", rounds, isolation="worktree")
    first = play(root, cap=1)
    second = play(root, cap=2)  # carries the first's sources; records round 2's claims
    assert first.branch == second.branch
    assert gates_of(second) == [[("citations", True), ("convergence", False)]]
    decoy = run_folder(root, "ffffffff")  # another loop's run, started later, other sources
    EventLog(decoy / EVENTS_FILE, run_id="ffffffff").emit(
        RunStart(goal="other", model="m", max_iterations=1, workspace=str(root), branch="other")
    )
    SourceArchive(decoy / ARCHIVE_DIR).add("http://127.0.0.1:9/elsewhere", b"not this loop's")
    (root / ".harness" / "runs" / "zzzzzzzz").symlink_to(run_folder(root, second.run_id))
    third = play(root, cap=3)  # the second run holds round 2's entry: the first does not
    assert third.passed
    assert gates_of(third) == [[("citations", True), ("convergence", True)]]
    assert fetches(root, third.run_id) == fetches(root, first.run_id)
    ledger = read_ledger(run_folder(root, third.run_id) / LEDGER_FILE)
    assert ledger[0] == read_ledger(run_folder(root, second.run_id) / LEDGER_FILE)[0]
    assert [e.moved for e in ledger] == [True, False]


def test_a_restart_starts_its_archive_and_ledger_afresh(tmp_path: Path, web: Web) -> None:
    rounds = {1: [fetch(web), write(findings(web)), "Written."], 2: IDLE}
    root = project(tmp_path / "p", rounds)
    first = play(root, cap=1)
    again = play(root, cap=1, earlier="restart")
    assert gates_of(again) == [[("citations", True), ("convergence", False)]]
    assert again.rounds[0].gates[1].summary.startswith("2 claims this round: +2 added (C1, C2)")
    assert [f[1:3] for f in fetches(root, again.run_id)] == [
        f[1:3] for f in fetches(root, first.run_id)
    ]  # fetched again: two fetches, not the first run's two and its own two
    assert read_ledger(run_folder(root, again.run_id) / LEDGER_FILE)[0].added == ["C1", "C2"]


@pytest.mark.parametrize("planted", [INDEX_FILE, "bytes"])
def test_a_link_in_the_earlier_runs_archive_stops_the_resume(
    tmp_path: Path, web: Web, planted: str
) -> None:
    root = project(tmp_path / "p", {1: [fetch(web), "Fetched."], 2: IDLE})
    first = play(root, cap=1)
    sources = run_folder(root, first.run_id) / ARCHIVE_DIR
    target = sources / planted
    if planted == "bytes":
        target = next((sources / "bytes").iterdir())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_bytes(target.read_bytes())
    target.unlink()
    target.symlink_to(elsewhere)
    resumed = play(root, cap=2)
    assert resumed.stop_reason is StopReason.ERROR
    assert resumed.rounds == []
    assert str(target) in resumed.message
    assert "follows no link" in resumed.message
    assert not (run_folder(root, resumed.run_id) / LEDGER_FILE).exists()
