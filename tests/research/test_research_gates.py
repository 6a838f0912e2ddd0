"""The citations gate against a 57-page local web: right quotes pass, no altered one does.

The sources are fetched through ``fetch_url`` into an archive, as an agent's round would; each
fabricated citation is added to findings that pass, and the gate must fail naming it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.research.archive import SourceArchive, source_id
from harness.research.citations import main
from harness.research.gates import citations_gate
from harness.research.web import WebConfig, fetch_url_tool
from harness.tools import ToolContext
from tests.research_web import HISTORY, REPORT, Web, serve_web

KEEPER = "The keeper's log says the lamp was first lit on 20 May 1887, six days late.\n"


@dataclass(frozen=True)
class Fetched:
    web: Web
    archive: SourceArchive
    workspace: Path

    @property
    def correct(self) -> str:
        a, b, c = self.web.gazette.url, self.web.archive.url, self.web.survey.url
        return f"""# The Harran Bridge

- C1 (key): It opened in 1887 [source: {a}/history.html] "was opened on 14 May 1887 by the \
county engineer" [source: {b}/report.pdf] "The bridge opened to traffic in 1887 after four \
years of work."
- C2: Its main span is 142 metres [source: {source_id(HISTORY)}] "Its main span is 142\u00a0metres \
long" [source: {b}/go/report] "The main span measures 142 metres between the piers."
- C3: Marsh doubted the piers [source: {a}/old/history] "the piers are sound - for now..."
- C4: The lamp was lit on 20 May [source: sources/keeper.md] "first lit on 20 May 1887"
- C5: The toll ended in 1901 [source: {a}/tolls.html] "In 1901 the toll was abolished"

## Contradictions

A survey gives 148 metres [source: {c}/span-survey.html] "measured the main span at 148 \
metres"; another account says 1888 [source: {c}/opening.html] "the bridge opened in 1888, a \
year late."
"""


@pytest.fixture(scope="module")
def fetched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fetched]:
    root = tmp_path_factory.mktemp("research")
    (root / "sources").mkdir()
    (root / "sources" / "keeper.md").write_text(KEEPER)
    archive = SourceArchive(root / "run" / "sources")
    fetch_url = fetch_url_tool(WebConfig(allow_domains=["127.0.0.1"], timeout=10), archive)
    with serve_web() as web:
        a, b, c = web.gazette.url, web.archive.url, web.survey.url
        for url in (
            f"{a}/old/history",
            f"{b}/go/report",
            f"{b}/cross",  # to the gazette's tolls page
            f"{c}/span-survey.html",
            f"{c}/opening.html",
            f"{b}/doc/3.pdf",
        ):
            result = fetch_url.run({"url": url}, ToolContext(workspace=root))
            assert not result.is_error, result.output
        yield Fetched(web, archive, root)


def check(fetched: Fetched, findings: str) -> tuple[bool, str, str]:
    (fetched.workspace / "findings.md").write_text(findings)
    gate = citations_gate(
        "findings.md", archive=fetched.archive, sources="sources", min_sources=4,
        require_contradictions=True,
    )  # fmt: skip
    report = gate.check(fetched.workspace)
    return report.passed, report.summary, report.output_tail


def test_the_web_has_fifty_pages_and_more(fetched: Fetched) -> None:
    assert fetched.web.page_count >= 50
    pdfs = [p for s in (fetched.web.gazette, fetched.web.archive) for p in s.pages if ".pdf" in p]
    assert len(pdfs) == 11


def test_findings_that_quote_correctly_pass(fetched: Fetched) -> None:
    passed, summary, problems = check(fetched, fetched.correct)
    assert (passed, problems) == (True, "")
    assert summary == "9 citations, 6 sources verified, every quote found in its source"


# (kind, source, quote): the source is a site's name and a path, an id, or a local file
FABRICATED: list[tuple[str, str, str]] = [
    ("a changed number", "gazette/history.html", "Its main span is 148 metres long"),
    ("a changed day", "gazette/history.html", "was opened on 15 May 1887 by the county engineer"),
    ("a changed year in a PDF", "archive/report.pdf", "opened to traffic in 1888 after four years"),
    ("a changed amount", "archive/report.pdf", "The cost was 41,520 pounds"),
    ("a changed name", "gazette/history.html", "by the county engineer, Ellen March"),
    ("a changed unit", "gazette/history.html", "Its main span is 142 feet long"),
    ("an abbreviated unit", "gazette/history.html", "Its main span is 142 m long"),
    ("a word added", "gazette/history.html", "was officially opened on 14 May 1887"),
    ("a word dropped", "gazette/history.html", "was opened on 14 May by the county engineer"),
    ("a synonym", "gazette/history.html", "was inaugurated on 14 May 1887"),
    ("a negation", "gazette/history.html", "The piers were not sunk by hand."),
    ("words reordered", "gazette/history.html", "was opened on May 14 1887"),
    ("a merged sentence", "gazette/history.html",
     "was opened on 14 May 1887 by the county engineer and carries two lanes of traffic"),
    ("an elision", "gazette/history.html", "The Harran Bridge was opened ... by the county engineer"),
    ("punctuation added", "gazette/history.html", "Its main span is 142 metres long, and carries"),
    ("case changed", "archive/report.pdf", "THE BRIDGE OPENED TO TRAFFIC IN 1887"),
    ("a paraphrase", "archive/report.pdf", "the bridge was opened in 1887"),
    ("markup in the quote", "gazette/history.html", "<p>Its main span is 142 metres long"),
    ("text of the navigation, not the article", "gazette/history.html", "About the site"),
    ("a right quote with the wrong source", "archive/report.pdf",
     "was opened on 14 May 1887 by the county engineer"),
    ("a right quote from another page of the same site", "gazette/history.html",
     "In 1901 the toll was abolished"),
    ("a near-duplicate from the wrong site", "survey/span-survey.html",
     "Its main span is 142 metres long"),
    ("the contradicting year pinned on the agreeing page", "gazette/history.html",
     "the bridge opened in 1888"),
    ("a page never fetched", "survey/history-draft.html",
     "was opened on 15 May 1887 by the county engineer"),
    ("the byte-identical mirror, never fetched", "archive/mirror/history.html",
     "Its main span is 142 metres long"),
    ("a never-fetched page of a fetched site", "archive/doc/4.pdf", "Ledger page 4"),
    ("an id of content never fetched", source_id(b"The bridge opened in 1887."),
     "The bridge opened in 1887."),
    ("a made-up id", "s-0123456789ab", "was opened on 14 May 1887"),
    ("a local file altered", "sources/keeper.md", "first lit on 21 May 1887"),
    ("a local file that does not exist", "sources/diary.md", "first lit on 20 May 1887"),
    ("a web quote pinned on a local file", "sources/keeper.md", "In 1901 the toll was abolished"),
]  # fmt: skip


def _address(fetched: Fetched, source: str) -> str:
    site, _, path = source.partition("/")
    sites = {"gazette": fetched.web.gazette, "archive": fetched.web.archive}
    sites["survey"] = fetched.web.survey
    return f"{sites[site].url}/{path}" if site in sites else source


def test_there_are_at_least_twenty_kinds_of_fabrication() -> None:
    assert len({kind for kind, _, _ in FABRICATED}) == len(FABRICATED) >= 20


@pytest.mark.parametrize(("kind", "source", "quote"), FABRICATED, ids=[k for k, _, _ in FABRICATED])
def test_every_fabricated_quote_fails_naming_its_citation(
    fetched: Fetched, kind: str, source: str, quote: str
) -> None:
    cited = _address(fetched, source)
    findings = fetched.correct.replace(
        "## Contradictions", f'- C9: {kind} [source: {cited}] "{quote}"\n\n## Contradictions'
    )
    passed, summary, problems = check(fetched, findings)
    assert not passed
    [problem] = problems.splitlines()
    line = findings.splitlines().index(next(x for x in findings.splitlines() if "- C9:" in x))
    assert problem.startswith(f"- line {line + 1}: "), problem
    assert cited in problem
    assert f'"{quote[:40]}' in problem
    assert summary.startswith("1 problem(s) in 10 citations")


def test_the_typography_of_a_quote_is_all_that_is_forgiven(fetched: Fetched) -> None:
    a = fetched.web.gazette.url
    quotes = {
        "the piers are sound \u2014 for now\u2026": True,  # as the page has it
        "the piers are sound - for now...": True,  # plain dash and three dots
        "the piers are\u00a0sound \u2013  for\nnow\u2026": True,  # NBSP, en dash, line break
        "the piers are sound -- for now...": False,  # two hyphens are not a dash
        "the piers are sound-for now...": False,  # whitespace is made uniform, not removed
        "the piers are sound - for now ...": False,  # nor added
    }
    verdicts = {}
    for quote in quotes:
        added = f'[source: {a}/history.html] "{quote}"\n\n## Contradictions'
        verdicts[quote] = check(fetched, fetched.correct.replace("## Contradictions", added))[0]
    assert verdicts == quotes


def test_archived_bytes_changed_after_the_fetch_fail_the_gate(
    fetched: Fetched, tmp_path: Path
) -> None:
    copy = SourceArchive(tmp_path / "copy")
    for record in fetched.archive.records():
        copy.add(record.url, fetched.archive.body(record), requested=record.requested,
                 headers=record.headers, encoding=record.encoding)  # fmt: skip
    target = copy.find(f"{fetched.web.archive.url}/report.pdf")
    assert target is not None
    (copy.folder / target.file).write_bytes(REPORT.replace(b"1887", b"1888"))
    tampered = Fetched(fetched.web, copy, fetched.workspace)
    passed, _, problems = check(tampered, fetched.correct)
    assert not passed
    assert "do not match their hash" in problems
    assert f"{fetched.web.archive.url}/report.pdf" in problems


def test_the_command_line_checks_against_an_archive(
    fetched: Fetched, capsys: pytest.CaptureFixture[str]
) -> None:
    findings = fetched.workspace / "cli-findings.md"
    a = fetched.web.gazette.url
    findings.write_text(f'[source: {a}/tolls.html] "In 1901 the toll was abolished"\n')
    archive = str(fetched.archive.folder)
    assert main([str(findings), "--archive", archive]) == 0  # no sources folder needed
    assert capsys.readouterr().out.endswith(
        "1 citations, 1 sources verified, every quote found in its source\n"
    )
    findings.write_text(f'[source: {a}/tolls.html] "In 1902 the toll was abolished"\n')
    assert main([str(findings), "--archive", archive]) == 1
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(
        f'- line 1: [{a}/tolls.html] "In 1902 the toll was abolished": quote not found'
    )
    assert main([str(findings), "--archive", str(fetched.workspace / "none")]) == 2


def test_an_index_line_written_from_outside_the_run_is_not_a_fetch(
    fetched: Fetched, tmp_path: Path
) -> None:
    own = SourceArchive(tmp_path / "sources", own_only=True)  # as a loop's tools and gates share
    fetch_url = fetch_url_tool(WebConfig(allow_domains=["127.0.0.1"], timeout=10), own)
    tolls = f"{fetched.web.gazette.url}/tolls.html"
    assert not fetch_url.run({"url": tolls}, ToolContext(workspace=tmp_path)).is_error
    forged_url = f"{fetched.web.survey.url}/history-draft.html"  # never fetched
    forger = SourceArchive(tmp_path / "sources")  # the agent's shell, writing to the folder
    forger.add(
        forged_url, b"The bridge was opened in 1886.", headers={"content-type": "text/plain"}
    )
    findings = (
        f'- C1: [source: {tolls}] "In 1901 the toll was abolished"\n'
        f'- C2: [source: {forged_url}] "The bridge was opened in 1886."\n'
    )
    outcomes = []
    for archive in (forger, own):
        checked = Fetched(fetched.web, archive, fetched.workspace)
        outcomes.append(check(checked, findings + "\n## Contradictions\n\nnone\n")[2])
    trusting, strict = outcomes
    assert "[" + forged_url + "]" not in trusting  # an archive that trusts its index is fooled
    assert f'- line 2: [{forged_url}] "The bridge was opened in 1886.": never fetched' in strict


def test_local_files_are_archived_and_read_like_fetched_ones(tmp_path: Path) -> None:
    (tmp_path / "sources").mkdir()
    (tmp_path / "sources" / "keeper.md").write_text(KEEPER)
    (tmp_path / "sources" / "report.pdf").write_bytes(REPORT)
    archive = SourceArchive(tmp_path / "run", own_only=True)
    findings = (
        '- C1: [source: sources/keeper.md] "first lit on 20 May 1887"\n'
        '- C2: [source: report.pdf] "The bridge opened to traffic in 1887"\n'
    )
    (tmp_path / "findings.md").write_text(findings)
    gate = citations_gate("findings.md", archive=archive, sources="sources", min_sources=2)
    for _ in range(2):  # each content is kept once, however often it is checked
        assert gate.check(tmp_path).passed
    kept = [(r.url, r.kind, r.content_type) for r in archive.records()]
    assert kept == [
        ("file:sources/keeper.md", "file", "text/plain"),
        ("file:sources/report.pdf", "file", "application/pdf"),
    ]
    (tmp_path / "sources" / "keeper.md").write_text(KEEPER.replace("20 May", "21 May"))
    report = gate.check(tmp_path)
    assert not report.passed
    assert report.output_tail.splitlines()[0] == (
        '- line 1: quote not found in sources/keeper.md: "first lit on 20 May 1887"'
    )
    assert [r.url for r in archive.records()][-1] == "file:sources/keeper.md"  # the new bytes
    assert len(archive.records()) == 3
