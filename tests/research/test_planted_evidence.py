"""Evidence the request itself planted does not verify: a quote found only where a page echoes
the address asked for, a web search's answer (which carries the query), a quote of a word or a
letter; and held-out tests committed to the repository the agent works in are refused."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

from harness.assemble.build import build_loop
from harness.core.errors import ConfigError
from harness.core.sink import NULL_SINK
from harness.research.archive import INDEX_FILE, SourceArchive
from harness.research.citations import MIN_QUOTE_CHARS, MIN_QUOTE_WORDS, check_findings
from tests.conftest import git
from tests.verify.test_held_out_example import _example

HARNESS = str(Path(sys.executable).with_name("harness"))
"""The installed command, beside the Python running the tests (found without PATH)."""

LIE = "the moon is made of green cheese"
HTML = {"content-type": "text/html; charset=utf-8"}
GENUINE = "<p>The lighthouse was first lit on 1 November 1851 by the keeper.</p>"


def _archive(tmp_path: Path) -> SourceArchive:
    return SourceArchive(tmp_path / "archive")


def _page(archive: SourceArchive, url: str, body: str, kind: str = "page") -> str:
    html = f"<html><body>{body}</body></html>".encode()
    return archive.add(url, html, headers=HTML, kind=kind).id  # type: ignore[arg-type]


def _check(archive: SourceArchive, source: str, said: str) -> tuple[str, ...]:
    return check_findings(f'Claim [source: {source}] "{said}"\n', None, archive=archive).problems


# --- the attacks the examples name ----------------------------------------------------------


def test_a_page_echoing_its_query_string_does_not_verify_a_fabricated_quote(
    tmp_path: Path,
) -> None:
    archive = _archive(tmp_path)
    url = f"http://127.0.0.1:9/search?q={quote_plus(LIE)}"
    _page(archive, url, f"<h1>Results for {LIE}</h1>{GENUINE}")
    problems = _check(archive, url, LIE)
    assert problems[0].endswith(f"the quote is in the address asked for ({url})")
    assert problems[1] == "0 distinct sources cited with a verified quote; at least 1 required"


def test_a_web_search_answer_is_a_lead_not_a_source(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    answer = f'{{"results": [{{"title": "x", "snippet": "{LIE} indeed, say experts"}}]}}'
    found = archive.add("http://127.0.0.1:9/api/search?q=cheese", answer.encode(),
                        headers={"content-type": "application/json"}, kind="search")  # fmt: skip
    problems = _check(archive, found.id, f"{LIE} indeed, say experts")
    assert "is a web search's answer, which carries the query: a lead, not a source" in problems[0]


@pytest.mark.parametrize("said", ["a", "lit", "first lit", "1851", "the keeper"])
def test_a_quote_of_a_word_or_a_letter_does_not_verify(said: str, tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    url = "http://127.0.0.1:9/history"
    _page(archive, url, GENUINE)
    problems = _check(archive, url, said)
    assert f'too short to verify: "{said}"' in problems[0]
    assert f"(at least {MIN_QUOTE_WORDS} words and {MIN_QUOTE_CHARS} characters)" in problems[0]


@pytest.mark.parametrize("said", [" ", "\u00a0\u00a0", "\t\n "])
def test_a_quote_of_whitespace_never_counts(said: str, tmp_path: Path) -> None:
    (tmp_path / "sources").mkdir()
    (tmp_path / "sources" / "a.md").write_text("words " * 20)
    report = check_findings(f'[source: a] "{said}"', tmp_path / "sources")
    assert report.problems[0] == "line 1: empty quote from a"
    assert report.sources_verified == ()


def test_held_out_tests_committed_to_the_repository_are_refused_loudly(tmp_path: Path) -> None:
    spec = _example(tmp_path, max_iterations=1)
    (spec.root / ".gitignore").write_text(".harness/\n")  # held_out/ no longer ignored
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "held-out tests committed")
    with pytest.raises(ConfigError) as refused:
        build_loop(spec, events=NULL_SINK)
    said = str(refused.value)
    assert "field 'gates[1].held_out'" in said
    assert "is committed to the repository the agent works in" in said
    assert "examples/bugfix/held_out/tests/test_month_days.py and 0 more" in said


def test_harness_run_with_committed_held_out_tests_exits_2_naming_the_field(
    tmp_path: Path,
) -> None:
    spec = _example(tmp_path, max_iterations=1)
    (spec.root / ".gitignore").write_text(".harness/\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "held-out tests committed")
    done = subprocess.run([HARNESS, "run", str(spec.root)], capture_output=True, text=True,
                          timeout=120, cwd=spec.root)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "gates[1].held_out" in done.stderr
    assert "committed to the repository" in done.stderr
    assert not (spec.root / ".harness" / "runs").exists()  # nothing ran


# --- further attacks ------------------------------------------------------------------------


def test_a_quote_spanning_an_echo_and_real_text_does_not_verify(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    url = f"http://127.0.0.1:9/find?topic={quote_plus('was built of cheese')}"
    _page(archive, url, "<p>The lighthouse was built of cheese and stone.</p>")
    problems = _check(archive, url, "The lighthouse was built of cheese and stone")
    assert "quote not found" in problems[0]


def test_an_echo_of_the_path_does_not_verify(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    url = "http://127.0.0.1:9/wiki/" + quote(LIE)
    _page(archive, url, f"<p>No page named {LIE} exists.</p>")
    assert "the quote is in the address asked for" in _check(archive, url, LIE)[0]


def test_an_echo_of_a_slug_with_dashes_does_not_verify(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    url = "http://127.0.0.1:9/news/" + LIE.replace(" ", "-")
    _page(archive, url, f"<h1>{LIE.title()}</h1>")
    assert "the quote is in the address asked for" in _check(archive, url, LIE.title())[0]


def test_an_echo_in_another_case_does_not_verify(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    url = f"http://127.0.0.1:9/s?q={quote_plus(LIE)}"
    _page(archive, url, f"<p>YOU SEARCHED: {LIE.upper()} - NOTHING FOUND</p>")
    problems = _check(archive, url, f"YOU SEARCHED: {LIE.upper()}")
    assert "quote not found" in problems[0]


def test_an_echo_of_the_fragment_does_not_verify(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    url = f"http://127.0.0.1:9/page#{quote(LIE)}"
    _page(archive, url, f"<p>Section: {LIE}</p>{GENUINE}")
    assert "the quote is in the address asked for" in _check(archive, url, LIE)[0]


def test_an_echo_of_a_second_query_value_does_not_verify(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    url = f"http://127.0.0.1:9/s?lang=en&note={quote_plus(LIE)}&page=2"
    _page(archive, url, f"<p>Note: {LIE}.</p>")
    problems = _check(archive, url, f"Note: {LIE}")
    assert "quote not found" in problems[0]  # the echo is cut out of the page
    assert problems[-1].startswith("0 distinct sources")


def test_an_echo_after_a_redirect_of_the_address_asked_for_does_not_verify(
    tmp_path: Path,
) -> None:
    archive = _archive(tmp_path)
    asked = f"http://127.0.0.1:9/go?to={quote_plus(LIE)}"
    html = f"<html><body><p>You came for {LIE} today</p></body></html>".encode()
    archive.add("http://127.0.0.1:9/landing", html, requested=asked, headers=HTML)
    problems = _check(archive, "http://127.0.0.1:9/landing", f"You came for {LIE} today")
    assert "quote not found" in problems[0]


def test_a_double_encoded_echo_does_not_verify(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    url = f"http://127.0.0.1:9/s?q={quote(quote(LIE))}"
    _page(archive, url, f"<p>Query: {LIE}</p>")
    problems = _check(archive, url, f"Query: {LIE}")
    assert problems[-1].startswith("0 distinct sources")


def test_genuine_text_around_an_echo_still_verifies(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    url = f"http://127.0.0.1:9/s?q={quote_plus('lighthouse history')}"
    _page(archive, url, f"<h1>Results for lighthouse history</h1>{GENUINE}")
    report = check_findings(
        f'Claim [source: {url}] "first lit on 1 November 1851 by the keeper"\n', None,
        archive=archive,
    )  # fmt: skip
    assert report.passed, report.problems


def test_a_search_answer_cited_by_its_address_is_a_lead_too(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    url = "http://127.0.0.1:9/api/search?q=lighthouse"
    archive.add(url, GENUINE.encode(), headers=HTML, kind="search")
    problems = _check(archive, url, "first lit on 1 November 1851")
    assert "a lead, not a source" in problems[0]


def test_a_page_fetched_after_a_search_verifies_its_own_text(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    archive.add("http://127.0.0.1:9/api/search?q=lighthouse", b'{"results": []}',
                headers={"content-type": "application/json"}, kind="search")  # fmt: skip
    url = "http://127.0.0.1:9/history"
    _page(archive, url, GENUINE)
    report = check_findings(f'[source: {url}] "first lit on 1 November 1851"', None,
                            archive=archive)  # fmt: skip
    assert report.passed, report.problems


@pytest.mark.parametrize("said", ["two words", "short one", "a b c", "1 2 3 4"])
def test_quotes_under_the_minimum_fail_for_local_sources_too(said: str, tmp_path: Path) -> None:
    (tmp_path / "sources").mkdir()
    (tmp_path / "sources" / "a.md").write_text(f"text with {said} in it and more\n")
    report = check_findings(f'[source: a] "{said}"', tmp_path / "sources")
    assert "too short to verify" in report.problems[0]


def test_a_quote_at_the_minimum_verifies(tmp_path: Path) -> None:
    (tmp_path / "sources").mkdir()
    (tmp_path / "sources" / "a.md").write_text("we saw the lamp lit at dusk\n")
    said = "the lamp lit"  # three words, twelve characters: too short
    assert "too short" in check_findings(f'[source: a] "{said}"', tmp_path / "sources").problems[0]
    said = "the lamp lit at"  # four words, fifteen characters
    assert check_findings(f'[source: a] "{said}"', tmp_path / "sources").passed


def test_held_out_tests_staged_but_not_committed_are_refused(tmp_path: Path) -> None:
    spec = _example(tmp_path, max_iterations=1)
    (spec.root / ".gitignore").write_text(".harness/\n")
    git(tmp_path, "add", "-A")  # in the index: the next commit, and every worktree, would hold it
    with pytest.raises(ConfigError, match="is committed to the repository the agent works in"):
        build_loop(spec, events=NULL_SINK)


def test_held_out_tests_outside_the_repository_are_taken(tmp_path: Path) -> None:
    spec = _example(tmp_path, max_iterations=1)  # ignored by git: untracked, hidden by the sandbox
    loop = build_loop(spec, events=NULL_SINK)
    assert any("held-out" in gate.name for gate in loop.settings.gates)


@pytest.mark.parametrize(
    "file", ["../outside.txt", "/OUTSIDE", "bytes/../../outside.txt", "bytes/notes.txt", ""]
)
def test_an_archive_naming_a_file_outside_its_bytes_reads_nothing(
    file: str, tmp_path: Path
) -> None:
    """A shared or replayed archive is data: its index names its bytes by their hash alone, so
    a line naming another file (with that file's true hash) is refused, not read."""
    secret = b"The launch code is 0000 1111 2222 3333, kept outside the archive."
    outside = tmp_path / "outside.txt"
    outside.write_bytes(secret)
    digest = hashlib.sha256(secret).hexdigest()
    archive = tmp_path / "archive"
    (archive / "bytes").mkdir(parents=True)
    (archive / "bytes" / "notes.txt").write_bytes(secret)
    named = file.replace("/OUTSIDE", str(outside))
    record = {"id": "s-" + digest[:12], "sha256": digest, "url": "http://x.test/a",
              "requested": "http://x.test/a", "fetched_at": "2026-01-01T00:00:00+00:00",
              "status": 200, "headers": {"content-type": "text/plain"},
              "content_type": "text/plain", "file": named}  # fmt: skip
    (archive / INDEX_FILE).write_text(json.dumps(record) + "\n")
    findings = tmp_path / "findings.md"
    findings.write_text(f'[source: s-{digest[:12]}] "The launch code is 0000 1111 2222 3333"\n')
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli.main", "check", "citations", str(findings),
         "--archive", str(archive)], capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{archive / INDEX_FILE}: line 1 is not a fetch record" in done.stderr
    assert "file" in done.stderr
    assert "ok" not in done.stdout
