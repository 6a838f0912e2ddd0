"""fetch_url keeps what it reads in the run's archive; read_source and a replay read it offline."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.research.archive import SourceArchive, source_id
from harness.research.web import WebConfig, fetch_url_tool, read_source_tool
from harness.tools import ToolContext
from tests.research_web import HISTORY, REPORT, Web, serve_web

LIMITS = WebConfig(allow_domains=["127.0.0.1"], max_bytes=100_000, timeout=10)


@pytest.fixture(scope="module")
def web() -> Iterator[Web]:
    with serve_web() as served:
        yield served


def fetch(url: str, archive: SourceArchive, tmp_path: Path, **kw: object) -> tuple[str, bool]:
    result = fetch_url_tool(LIMITS, archive, **kw).run(  # type: ignore[arg-type]
        {"url": url}, ToolContext(workspace=tmp_path)
    )
    return result.output, result.is_error


def test_a_redirected_page_is_archived_under_both_addresses(web: Web, tmp_path: Path) -> None:
    archive = SourceArchive(tmp_path / "archive")
    output, is_error = fetch(f"{web.gazette.url}/old/history", archive, tmp_path)
    assert not is_error
    assert output.startswith(f"# {web.gazette.url}/history.html\n\n# The Harran Bridge\n")
    assert output.endswith(f"\n\n[archived as {source_id(HISTORY)}]")
    [record] = archive.records()
    assert (record.requested, record.url, record.status) == (
        f"{web.gazette.url}/old/history",
        f"{web.gazette.url}/history.html",
        200,
    )
    assert archive.body(record) == HISTORY


def test_a_pdf_is_read_as_text(web: Web, tmp_path: Path) -> None:
    archive = SourceArchive(tmp_path / "archive")
    output, is_error = fetch(f"{web.archive.url}/go/report", archive, tmp_path)
    assert not is_error
    assert "The bridge opened to traffic in 1887 after four years of work." in output
    [record] = archive.records()
    assert (record.content_type, record.file.endswith(".pdf")) == ("application/pdf", True)
    assert archive.body(record) == REPORT


def test_read_source_serves_the_archive_with_the_web_gone(tmp_path: Path) -> None:
    archive = SourceArchive(tmp_path / "archive")
    with serve_web() as gone:
        online, _ = fetch(f"{gone.gazette.url}/history.html", archive, tmp_path)
        url = f"{gone.gazette.url}/history.html"
    read = read_source_tool(archive)
    ctx = ToolContext(workspace=tmp_path)
    for name in (source_id(HISTORY), url):
        result = read.run({"source": name}, ctx)
        assert (result.is_error, result.output) == (False, online)
    missing = read.run({"source": f"{url}x"}, ctx)
    assert missing.is_error
    assert "not in this run's archive; fetch it first" in missing.output


def test_a_replayed_run_fetches_from_its_archive_only(tmp_path: Path) -> None:
    first = SourceArchive(tmp_path / "first")
    with serve_web() as gone:
        online, _ = fetch(f"{gone.archive.url}/go/report", first, tmp_path)
        requested = f"{gone.archive.url}/go/report"
    again = SourceArchive(tmp_path / "again")
    output, is_error = fetch(requested, again, tmp_path, replay=first)
    assert (is_error, output) == (False, online)  # the server is gone: from the archive
    assert [r.id for r in again.records()] == [source_id(REPORT)]
    never, is_error = fetch(f"{gone.archive.url}/doc/1.pdf", again, tmp_path, replay=first)
    assert is_error
    assert f"not in the replayed archive {tmp_path / 'first'} (offline)" in never
    refused, is_error = fetch("http://elsewhere.example/", again, tmp_path, replay=first)
    assert is_error
    assert "elsewhere.example is not an allowed domain" in refused


def test_a_changed_archive_is_an_error_observation(tmp_path: Path) -> None:
    archive = SourceArchive(tmp_path / "archive")
    record = archive.add("http://127.0.0.1:9/h", HISTORY, headers={"content-type": "text/html"})
    (archive.folder / record.file).write_bytes(HISTORY.replace(b"1887", b"1888"))
    result = read_source_tool(archive).run({"source": record.id}, ToolContext(workspace=tmp_path))
    assert result.is_error
    assert f"the archived bytes of {record.id} do not match their hash" in result.output
    replayed, is_error = fetch("http://127.0.0.1:9/h", SourceArchive(tmp_path / "b"), tmp_path,
                               replay=archive)  # fmt: skip
    assert is_error
    assert "do not match their hash" in replayed
    assert "1888" not in replayed
