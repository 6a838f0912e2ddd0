"""Where a citation's quote is looked for: a local file or a fetched source, each only where it
may be; what is kept in the run's archive, and what never verifies."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.research.archive import SourceArchive
from harness.research.citations import SourceReader, Verified, check_findings, parse_citations
from tests.research_web import HISTORY, REPORT

KEEPER = "The lamp was first lit on 20 May 1887; our sources agree on the day.\n"
CITED = '[source: keeper.md] "first lit on 20 May 1887"'
BROKEN_PDF = b"%PDF-1.4\nxref\n0 0\ntrailer\n7\nstartxref\n9\n%%EOF\n"  # its trailer a number
HTML = {"content-type": "text/html; charset=utf-8"}


@pytest.fixture
def sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "sources"
    folder.mkdir()
    (folder / "keeper.md").write_text(KEEPER)
    monkeypatch.chdir(tmp_path)
    return folder


@pytest.fixture
def archive(tmp_path: Path) -> SourceArchive:
    return SourceArchive(tmp_path / "archive")


def test_a_local_name_without_a_sources_folder_is_named_not_looked_for(
    archive: SourceArchive,
) -> None:
    said = 'line 1: [keeper.md] "first lit on 20 May 1887": not a fetched source\'s id or address'
    for kept in (archive, None):
        report = check_findings(CITED, None, archive=kept)
        assert report.problems[0] == said
        assert report.verified == ()


@pytest.mark.parametrize("source", ["http://127.0.0.1:9/history", "s-0123456789ab"])
def test_a_fetched_source_without_an_archive_is_named(sources: Path, source: str) -> None:
    report = check_findings(f'[source: {source}] "first lit on 20 May 1887"', sources)
    assert report.problems[0] == (
        f'line 1: [{source}] "first lit on 20 May 1887": a fetched source, but no archive of '
        "fetched sources was given"
    )


def test_local_files_go_into_the_archive_only_when_kept(
    sources: Path, archive: SourceArchive
) -> None:
    assert check_findings(CITED, sources, archive=archive).passed
    [citation] = parse_citations(CITED)
    assert isinstance(SourceReader(sources, archive).verify(citation), Verified)
    assert archive.records() == []
    assert not archive.folder.exists()
    assert check_findings(CITED, sources, archive=archive, keep_local=True).passed
    [record] = archive.records()
    assert (record.url, record.kind, record.content_type) == (
        "file:sources/keeper.md",
        "file",
        "text/plain",
    )
    assert archive.body(record) == KEEPER.encode()


def test_a_kept_local_file_is_checked_against_its_archived_bytes(
    sources: Path, archive: SourceArchive
) -> None:
    assert check_findings(CITED, sources, archive=archive, keep_local=True).passed
    [record] = archive.records()
    (archive.folder / record.file).write_bytes(KEEPER.replace("20 May", "21 May").encode())
    report = check_findings(CITED, sources, archive=archive, keep_local=True)
    assert report.problems[0] == (
        f'line 1: [keeper.md] "first lit on 20 May 1887": {archive.folder / record.file}: '
        f"the archived bytes of {record.id} do not match their hash"
    )


def test_a_kept_local_file_cited_by_its_id_is_not_read_for_echoes_of_its_name(
    sources: Path, archive: SourceArchive
) -> None:
    """A local file's name is not a request: a quote that its name holds verifies, and the
    parts of its name are not taken out of its text."""
    (sources / "first-lit-on-20-may.md").write_text(KEEPER)
    local = '[source: first-lit-on-20-may] "first lit on 20 May 1887"'
    assert check_findings(local, sources, archive=archive, keep_local=True).passed
    [record] = archive.records()
    findings = (
        f'[source: {record.id}] "first lit on 20 May"\n'
        f'[source: {record.id}] "our sources agree on the day"\n'
    )
    report = check_findings(findings, None, archive=archive)
    assert report.problems == ()
    assert [(v.source, v.origin) for v in report.verified] == [
        (record.id, "file:sources/first-lit-on-20-may.md")
    ] * 2


@pytest.mark.parametrize("said", ["  ", "first lit on"])
def test_a_short_quote_of_a_kept_local_file_cited_by_its_id_does_not_verify(
    sources: Path, archive: SourceArchive, said: str
) -> None:
    assert check_findings(CITED, sources, archive=archive, keep_local=True).passed
    [record] = archive.records()
    report = check_findings(f'[source: {record.id}] "{said}"', None, archive=archive)
    assert report.verified == ()
    assert report.problems[0].startswith(f"line 1: {'empty' if not said.strip() else 'quote'} ")


def test_a_local_pdf_or_page_is_read_as_a_fetched_one_and_a_broken_pdf_is_named(
    sources: Path,
) -> None:
    (sources / "report.pdf").write_bytes(REPORT)
    (sources / "history.html").write_bytes(HISTORY)
    (sources / "broken.pdf").write_bytes(BROKEN_PDF)
    findings = (
        '[source: report.pdf] "The bridge opened to traffic in 1887"\n'
        '[source: sources/history.html] "Its main span is 142 metres long"\n'
        '[source: broken.pdf] "the bridge opened in 1887"\n'
    )
    report = check_findings(findings, sources, min_sources=2)
    [problem] = report.problems
    assert problem.startswith(
        'line 3: [broken.pdf] "the bridge opened in 1887": the PDF cannot be read: '
    )
    assert [Path(v.source).name for v in report.verified] == ["report.pdf", "history.html"]


def test_the_same_bytes_on_two_hosts_are_one_source_from_the_first_host(
    archive: SourceArchive,
) -> None:
    first = archive.add("http://127.0.0.1:8001/history", HISTORY, headers=HTML)
    archive.add("http://Mirror.Example:8080/copy", HISTORY, headers=HTML)
    findings = (
        '[source: http://Mirror.Example:8080/copy] "Its main span is 142 metres long"\n'
        '[source: http://127.0.0.1:8001/history] "Its main span is 142 metres long"\n'
    )
    report = check_findings(findings, None, archive=archive)
    assert report.problems == ()
    assert report.sources_verified == (first.id,)
    assert [(v.source, v.origin) for v in report.verified] == [(first.id, "127.0.0.1:8001")] * 2


def test_a_search_answer_the_address_or_its_echo_never_verifies(archive: SourceArchive) -> None:
    search = archive.add(
        "http://127.0.0.1:9/api/search?q=lamp", b'{"results": ["the lamp was first lit in 1887"]}',
        headers={"content-type": "application/json"}, kind="search",
    )  # fmt: skip
    asked = "http://127.0.0.1:9/find?topic=was+built+of+cheese"
    html = b"<html><body><p>The lighthouse was built of cheese and stone.</p></body></html>"
    page = archive.add(asked, html, headers=HTML)
    findings = (
        f'[source: {search.id}] "the lamp was first lit in 1887"\n'
        f'[source: {asked}] "was built of cheese"\n'
        f'[source: {asked}] "The lighthouse was built of cheese and stone"\n'
        f'[source: {asked}] "cheese and"\n'
    )
    assert check_findings(findings, None, archive=archive).problems == (
        f'line 1: [{search.id}] "the lamp was first lit in 1887": {search.id} is a web search\'s '
        "answer, which carries the query: a lead, not a source (fetch the page it names and "
        "cite that)",
        f'line 2: [{asked}] "was built of cheese": the quote is in the address asked for ({asked})',
        f'line 3: [{asked}] "The lighthouse was built of cheese and stone": quote not found in '
        f"{page.id} ({asked})",
        f'line 4: quote from {asked} too short to verify: "cheese and" (at least 3 words and 15 '
        "characters)",
        "0 distinct sources cited with a verified quote; at least 1 required",
    )
