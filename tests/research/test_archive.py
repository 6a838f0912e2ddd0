"""The archive of fetched sources: kept by content hash, found by id or address, never altered."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from harness.core.errors import ConfigError, ToolError
from harness.core.nofollow import UnsafePath
from harness.research.archive import INDEX_FILE, SourceArchive, source_id, source_id_of
from harness.research.extract import renditions
from tests.research_web import HISTORY, REPORT


def test_the_same_bytes_from_two_addresses_are_one_source(tmp_path: Path) -> None:
    archive = SourceArchive(tmp_path)
    headers = {"Content-Type": "text/html; charset=utf-8", "Set-Cookie": "s=1", "ETag": "x"}
    first = archive.add(
        "http://a.example/h", HISTORY, requested="http://a.example/old", headers=headers
    )
    second = archive.add("http://b.example/mirror", HISTORY, headers=headers)
    digest = hashlib.sha256(HISTORY).hexdigest()
    assert first.id == second.id == source_id(HISTORY) == "s-" + digest[:12]
    assert [p.name for p in (tmp_path / "bytes").iterdir()] == [f"{digest}.html"]
    lines = [json.loads(line) for line in (tmp_path / INDEX_FILE).read_text().splitlines()]
    assert [(r["url"], r["requested"]) for r in lines] == [
        ("http://a.example/h", "http://a.example/old"),
        ("http://b.example/mirror", "http://b.example/mirror"),
    ]
    assert lines[0]["headers"] == {"content-type": "text/html; charset=utf-8", "etag": "x"}
    assert lines[0]["content_type"] == "text/html"
    assert lines[0]["fetched_at"].endswith("+00:00")
    assert archive.first(second).url == "http://a.example/h"


def test_a_source_is_found_by_id_or_either_address(tmp_path: Path) -> None:
    archive = SourceArchive(tmp_path)
    record = archive.add("http://a.example/h", HISTORY, requested="http://a.example/old")
    for name in (record.id, f"  {record.id}\n", "http://a.example/h", "http://a.example/old",
                 "http://a.example/h/#x", "http://a.example/h#x#y"):  # fmt: skip
        assert archive.find(name) == record, name
    for name in ("http://a.example/", "http://a.example/h2", "s-000000000000", "h", ""):
        assert archive.find(name) is None, name


def test_a_fetch_keeps_its_telling_headers_and_is_named_for_its_type(tmp_path: Path) -> None:
    archive = SourceArchive(tmp_path)
    kept = {"content-type": "application/json", "content-length": "2", "etag": '"e1"',
            "last-modified": "Mon, 01 Jan 2024 00:00:00 GMT", "server": "origin",
            "date": "Tue, 02 Jan 2024 00:00:00 GMT"}  # fmt: skip
    sent = {k.title(): v for k, v in kept.items()} | {"Set-Cookie": "s=1", "X-Trace": "t"}
    answer = archive.add("http://a.example/j", b"{}", headers=sent)
    assert answer.headers == kept
    assert (answer.status, answer.cut, answer.kind, answer.encoding) == (200, False, "page", None)
    named = {"text/markdown": ".md", "text/csv": ".txt", "image/png": ".bin",
             "application/pdf": ".pdf", "application/x-pdf": ".pdf"}  # fmt: skip
    for number, (kind, extension) in enumerate(named.items()):
        body = f"body {number}".encode()
        record = archive.add(f"http://a.example/{number}", body, headers={"content-type": kind})
        assert record.file == f"bytes/{hashlib.sha256(body).hexdigest()}{extension}"
    untyped = archive.add("http://a.example/u", b"<p>u</p>")
    assert (untyped.content_type, untyped.file[-5:]) == ("text/html", ".html")
    assert answer.file.endswith(".json")
    assert archive.records()[0] == answer


def test_a_line_recorded_before_cut_and_kind_existed_reads_with_their_defaults(
    tmp_path: Path,
) -> None:
    record = SourceArchive(tmp_path).add("http://a.example/h", b"one", cut=True, kind="file")
    line = record.model_dump(exclude={"cut", "kind", "encoding"})
    (tmp_path / INDEX_FILE).write_text(json.dumps(line) + "\n")
    [read] = SourceArchive(tmp_path).records()
    assert (read.cut, read.kind, read.encoding) == (False, "page", None)


@pytest.mark.parametrize("named", ["id", "file", "both"])
def test_an_index_line_not_named_by_its_bytes_hash_is_refused(named: str, tmp_path: Path) -> None:
    record = SourceArchive(tmp_path).add("http://a.example/h", b"one")
    other = hashlib.sha256(b"two").hexdigest()
    wrong = {"id": source_id_of(other), "file": f"bytes/{other}.html"}
    if named != "both":
        wrong = {named: wrong[named]}
    (tmp_path / INDEX_FILE).write_text(record.model_copy(update=wrong).model_dump_json() + "\n")
    with pytest.raises(ConfigError, match=r"(?s)line 1 is not a fetch record.*named by the bytes"):
        SourceArchive(tmp_path).records()


def test_what_is_written_passes_the_redactor_and_a_page_is_kept_as_fetched(
    tmp_path: Path,
) -> None:
    archive = SourceArchive(tmp_path, redact=lambda text: text.replace("hunter2", "[REDACTED]"))
    page = archive.add("http://a.example/p?key=hunter2", b"the page says hunter2")
    assert (page.url, page.requested) == ("http://a.example/p?key=[REDACTED]",) * 2
    assert archive.body(page) == b"the page says hunter2"  # a source's bytes: as fetched
    search = archive.add("http://s.example/?q=[REDACTED]", b'{"q": "hunter2"}',
                         requested="http://s.example/?q=hunter2", kind="search")  # fmt: skip
    assert search.requested == "http://s.example/?q=[REDACTED]"
    assert archive.body(search) == b'{"q": "[REDACTED]"}'  # a search's answer echoes the query
    assert search.id == source_id(b'{"q": "[REDACTED]"}')
    binary = archive.add("http://s.example/?q=b", b"\xff hunter2", kind="search")
    assert archive.body(binary) == b"\xff hunter2"  # not text: as it is
    assert "hunter2" not in (tmp_path / INDEX_FILE).read_text()


def test_blank_index_lines_are_skipped_and_an_unchanged_index_is_not_read_again(
    tmp_path: Path,
) -> None:
    archive = SourceArchive(tmp_path)
    record = archive.add("http://a.example/1", b"one")
    index = tmp_path / INDEX_FILE
    with index.open("a") as lines:
        lines.write("\n  \n")
    assert archive.records() == [record]
    before = index.stat()
    index.write_text(index.read_text().replace("a.example/1", "a.example/2"))  # the same size
    os.utime(index, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert archive.records() == [record]  # the same size and time: as read before
    assert SourceArchive(tmp_path).records()[0].url == "http://a.example/2"
    os.utime(index, ns=(before.st_atime_ns, before.st_mtime_ns + 1))
    assert archive.records()[0].url == "http://a.example/2"


def test_bytes_changed_after_archiving_are_refused(tmp_path: Path) -> None:
    archive = SourceArchive(tmp_path)
    record = archive.add("http://a.example/h", HISTORY, headers={"content-type": "text/html"})
    assert "14 May 1887" in archive.texts(record)[0]
    path = tmp_path / record.file
    path.write_bytes(HISTORY.replace(b"14 May", b"15 May"))
    with pytest.raises(ConfigError, match="do not match their hash"):
        archive.texts(record)
    path.unlink()
    with pytest.raises(ConfigError, match=f"the archived bytes of {record.id} cannot be read"):
        archive.body(record)


def test_a_corrupt_index_line_is_named(tmp_path: Path) -> None:
    archive = SourceArchive(tmp_path)
    archive.add("http://a.example/h", b"text")
    with (tmp_path / INDEX_FILE).open("a") as index:
        index.write('{"id": "s-1"}\n')
    with pytest.raises(ConfigError, match=f"{INDEX_FILE}: line 2 is not a fetch record"):
        archive.records()
    assert SourceArchive(tmp_path / "none").records() == []


def test_html_reads_as_markdown_and_plain_text_and_a_pdf_as_its_text() -> None:
    markdown, plain = renditions(HISTORY, "text/html")
    assert markdown.startswith("# The Harran Bridge\n")
    assert "Home" not in markdown  # navigation left out
    assert "Copyright" not in plain  # and the footer
    assert "Its main span is 142 metres long" in plain  # the no-break space as a space
    [text] = renditions(REPORT, "application/pdf")
    assert "The bridge opened to traffic in 1887 after four years of work." in text
    assert "41,250 pounds" in text


def test_what_is_not_text_is_refused() -> None:
    with pytest.raises(ToolError, match="image/png is not text"):
        renditions(b"\x89PNG", "image/png")
    with pytest.raises(ToolError, match="the PDF cannot be read"):
        renditions(b"%PDF-1.4 broken", "application/pdf")
    trailer_a_number = b"%PDF-1.4\nxref\n0 0\ntrailer\n7\nstartxref\n9\n%%EOF\n"
    with pytest.raises(ToolError, match="the PDF cannot be read: AttributeError: "):
        renditions(trailer_a_number, "application/pdf")  # pypdf's own error is not a PyPdfError


def test_fetches_added_by_another_reader_of_the_folder_are_seen(tmp_path: Path) -> None:
    writer, reader = SourceArchive(tmp_path), SourceArchive(tmp_path)
    writer.add("http://a.example/1", b"one")
    assert [r.url for r in reader.records()] == ["http://a.example/1"]
    writer.add("http://a.example/2", b"two")
    assert [r.url for r in reader.records()] == ["http://a.example/1", "http://a.example/2"]
    reader.records().clear()  # a copy: the archive's own list is not the caller's
    assert len(reader.records()) == 2


def test_a_link_planted_in_the_archive_is_not_written_through(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("kept\n")
    folder = tmp_path / "sources"
    (folder / "bytes").mkdir(parents=True)
    (folder / INDEX_FILE).symlink_to(outside)
    archive = SourceArchive(folder)
    with pytest.raises(UnsafePath):
        archive.add("http://a.example/h", HISTORY)
    assert outside.read_text() == "kept\n"
    (folder / INDEX_FILE).unlink()
    digest = hashlib.sha256(REPORT).hexdigest()
    (folder / "bytes" / f"{digest}.html").symlink_to(outside)
    with pytest.raises(UnsafePath):
        archive.add("http://a.example/r", REPORT)
    assert outside.read_text() == "kept\n"


def test_one_archive_keeps_all_of_another_as_recorded_there(tmp_path: Path) -> None:
    first = SourceArchive(tmp_path / "first")
    page = first.add(
        "http://a.example/h", HISTORY, requested="http://a.example/old",
        headers={"content-type": "text/html"}, cut=True, fetched_at="2020-01-02T03:04:05+00:00",
    )  # fmt: skip
    search = first.add("http://s.example/?q=x", b"{}", kind="search",
                       headers={"content-type": "application/json"})  # fmt: skip
    merged = SourceArchive(tmp_path / "merged")
    merged.add("http://b.example/r", REPORT)
    merged.keep_all(first)
    assert merged.records()[1:] == [page, search]  # the time of each fetch as it was
    assert merged.records()[1].fetched_at == "2020-01-02T03:04:05+00:00"
    assert merged.texts(merged.find("http://a.example/old")) == first.texts(page)
    (first.folder / page.file).write_bytes(b"altered")
    with pytest.raises(ConfigError, match="do not match their hash"):
        SourceArchive(tmp_path / "again").keep_all(first)


def test_a_contents_text_is_extracted_once_and_its_bytes_checked_every_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    extracted: list[bytes] = []

    def counted(body: bytes, kind: str, encoding: str | None = None) -> tuple[str, ...]:
        extracted.append(body)
        return renditions(body, kind, encoding)

    monkeypatch.setattr("harness.research.archive.renditions", counted)
    archive = SourceArchive(tmp_path)
    first = archive.add("http://a.example/h", HISTORY, headers={"content-type": "text/html"})
    mirror = archive.add("http://b.example/h", HISTORY, headers={"content-type": "text/html"})
    assert archive.texts(first) == archive.texts(mirror) == renditions(HISTORY, "text/html")
    assert extracted == [HISTORY]
    (tmp_path / first.file).write_bytes(HISTORY.replace(b"14 May", b"15 May"))
    with pytest.raises(ConfigError, match="do not match their hash"):
        archive.texts(first)


def test_another_runs_archive_is_read_without_following_a_link_on_the_way(tmp_path: Path) -> None:
    real = SourceArchive(tmp_path / "elsewhere" / "sources")
    real.add("http://a.example/h", HISTORY, headers={"content-type": "text/html"})
    runs = tmp_path / "project" / ".harness" / "runs"
    runs.mkdir(parents=True)
    (runs / "1a2b3c4d").symlink_to(tmp_path / "elsewhere")  # a run folder that is a link
    linked = SourceArchive(runs / "1a2b3c4d" / "sources", root=tmp_path / "project")
    with pytest.raises(UnsafePath, match="follows no link"):
        linked.records()
    (runs / "5e6f7a8b" / "sources").mkdir(parents=True)
    (runs / "5e6f7a8b" / "sources" / INDEX_FILE).symlink_to(real.index)
    with pytest.raises(UnsafePath, match="follows no link"):
        SourceArchive(runs / "5e6f7a8b" / "sources", root=tmp_path / "project").records()
    [record] = real.records()
    own = SourceArchive(runs / "9f8e7d6c" / "sources", root=tmp_path / "project")
    own.keep_all(real)
    assert own.records() == [record]  # as recorded there, the time of the fetch included
    (own.folder / record.file).unlink()
    (own.folder / record.file).symlink_to(real.folder / record.file)  # the same bytes, linked
    with pytest.raises(UnsafePath, match="follows no link"):
        own.body(record)
