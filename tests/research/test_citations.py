"""Citation checks: parsing, quotes verified against real source files, the command line."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from harness.research.citations import (
    Citation,
    check_findings,
    main,
    normalise,
    parse_citations,
    resolve_source,
    without_citations,
)

ROOT = Path(__file__).resolve().parents[2]

SOURCES = {
    "01-log.md": "The new light was first shown on\nthe evening of 1 November 1851.",
    "02-gazetteer.md": "A lighthouse, erected in 1853, a tower of 112 feet.",
    "03-diary.md": "Lit the lamp at sunset, being the first night of the light.",
    "04-inquiry.md": "We find that the fire was caused by paraffin spilled in the lamp room.",
}

FINDINGS = """\
# Findings

First shown in 1851 [source: sources/01-log.md] "first shown on the evening of 1 November 1851"
and the keeper agrees [source: 03-diary] "being the first night of the light".
The fire [source: 04-inquiry.md] "caused by paraffin spilled".

## Contradictions

The gazetteer says [source: sources/02-gazetteer.md] "erected in 1853".
"""


@pytest.fixture
def sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "sources"
    folder.mkdir()
    for name, text in SOURCES.items():
        (folder / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    return folder


def test_parse_both_forms_curly_quotes_and_wrapped_quotes() -> None:
    text = (
        'A [source: sources/a.md] "one two"\n'
        'b [b-file]  \u201cthree\n  four\u201d and [link](https://x.org) "not cited"\n'
    )
    assert parse_citations(text) == [
        Citation("sources/a.md", "one two", 1),
        Citation("b-file", "three four", 2),
    ]


def test_a_citation_after_a_first_empty_line_is_on_line_two() -> None:
    assert parse_citations('\n[source: a.md] "one two"') == [Citation("a.md", "one two", 2)]


def test_without_citations_takes_out_each_source_and_quote() -> None:
    text = 'Lit in 1851 [source: a.md] "first shown" and [b] \u201cagain\u201d, said [c].'
    assert without_citations(text) == "Lit in 1851   and  , said [c]."


def test_a_quote_does_not_run_over_a_blank_line() -> None:
    assert parse_citations('[source: a.md] "open\n\nnever closed" x') == []


def test_normalise_makes_whitespace_quotes_and_dashes_uniform() -> None:
    assert normalise("  it\u2019s \u201cnew\u201d \u2014\n ok ") == 'it\'s "new" - ok'


def test_resolve_source_by_path_name_or_stem(sources: Path) -> None:
    log = (sources / "01-log.md").resolve()
    assert resolve_source("sources/01-log.md", sources) == log
    assert resolve_source("01-log.md", sources) == log
    assert resolve_source("01-log", sources) == log
    assert resolve_source("01-log", Path("sources")) == log


@pytest.mark.parametrize("name", ["../secret.md", "/etc/passwd", "05-missing.md", "sources"])
def test_resolve_source_refuses_what_is_not_a_file_in_the_sources(sources: Path, name: str) -> None:
    (sources.parent / "secret.md").write_text("outside")
    assert resolve_source(name, sources) is None


def test_resolve_source_refuses_an_absolute_path_or_dots_even_into_the_sources(
    sources: Path,
) -> None:
    assert resolve_source(str((sources / "01-log.md").resolve()), sources) is None
    assert resolve_source("sources/../sources/01-log.md", sources) is None


def test_resolve_source_refuses_a_link_out_of_the_sources(sources: Path) -> None:
    (sources.parent / "outside.md").write_text("outside")
    (sources / "link.md").symlink_to(sources.parent / "outside.md")
    assert resolve_source("link.md", sources) is None


def test_findings_that_check_out(sources: Path) -> None:
    report = check_findings(FINDINGS, sources, min_sources=4, require_contradictions=True)
    assert report.passed
    assert report.problems == ()
    assert len(report.citations) == 4
    assert [Path(p).name for p in report.sources_verified] == [
        "01-log.md",
        "03-diary.md",
        "04-inquiry.md",
        "02-gazetteer.md",
    ]
    assert report.message == "4 citations, 4 sources verified, every quote found in its source"


def test_an_altered_quote_is_caught_with_its_line(sources: Path) -> None:
    text = FINDINGS.replace('"caused by paraffin spilled"', '"caused by spilled paraffin"')
    report = check_findings(text, sources, min_sources=3)
    assert not report.passed
    assert report.problems == (
        'line 5: quote not found in 04-inquiry.md: "caused by spilled paraffin"',
    )
    assert report.message.startswith("1 problem(s) in 4 citations, 3 sources verified; first:")


def test_every_problem_is_reported(sources: Path) -> None:
    text = (
        '# F\n\nClaim [source: sources/09-none.md] "anything".\n'
        'Claim [source: 01-log] "first shown on the evening".\n\n## Contradictions\n\n'
    )
    report = check_findings(text, Path("sources"), min_sources=2, require_contradictions=True)
    assert report.problems == (
        'line 3: [sources/09-none.md] "anything": not a file in sources/',
        "1 distinct sources cited with a verified quote; at least 2 required",
        'the "Contradictions" section is empty',
    )
    assert report.message == (
        "3 problem(s) in 2 citations, 1 sources verified; first: "
        'line 3: [sources/09-none.md] "anything": not a file in sources/'
    )


def test_a_report_and_its_citations_are_values_that_cannot_change(sources: Path) -> None:
    report = check_findings(FINDINGS, sources, min_sources=4)
    citation, verified = report.citations[0], report.verified[0]
    assert len({*report.citations, *report.verified, report}) == 9  # each can be a key
    for value, field in ((citation, "quote"), (verified, "origin"), (report, "problems")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, field, "changed")
    assert verified.citation is citation


def test_a_failed_quote_does_not_count_as_a_source(sources: Path) -> None:
    text = (
        '[source: 01-log] "first shown on the evening"\n[source: 02-gazetteer] "built in 1853 by"\n'
    )
    report = check_findings(text, sources, min_sources=2)
    assert len(report.sources_verified) == 1
    assert "at least 2 required" in report.problems[-1]


def test_no_citations_and_no_contradictions(sources: Path) -> None:
    report = check_findings("# F\n\nNothing cited.\n", sources, require_contradictions=True)
    assert report.problems == (
        'no citations found; cite as [source: PATH] "exact quote"',
        "0 distinct sources cited with a verified quote; at least 1 required",
        'no "## Contradictions" section',
    )


def test_a_contradictions_heading_inside_a_code_block_does_not_count(sources: Path) -> None:
    fenced = FINDINGS.replace("## Contradictions", "```markdown\n## Contradictions\n```")
    report = check_findings(fenced, sources, min_sources=4, require_contradictions=True)
    assert report.problems == ('no "## Contradictions" section',)


@pytest.mark.parametrize(
    ("said", "problem"),
    [
        ("keeper lit lamp", None),  # three words, fifteen characters: the minimum
        ("lighthouse keeper", "too short"),  # two words
        ("lit lamp after", "too short"),  # three words, fourteen characters
    ],
)
def test_a_quote_needs_three_words_and_fifteen_characters(
    sources: Path, said: str, problem: str | None
) -> None:
    (sources / "05-duty.md").write_text("The keeper lit lamp after lamp: a lighthouse keeper.")
    report = check_findings(f'[source: 05-duty] "{said}"', sources)
    assert report.passed is (problem is None)
    if problem:
        assert report.problems[0] == (
            f'line 1: quote from 05-duty too short to verify: "{said}" '
            "(at least 3 words and 15 characters)"
        )


def test_a_long_quote_is_shown_cut_at_eighty_characters(sources: Path) -> None:
    shown = "a" * 80
    text = f'[source: 09-none] "{shown}"\n[source: 09-none] "{shown}b"'
    report = check_findings(text, Path("sources"))
    assert report.problems[:2] == (
        f'line 1: [09-none] "{shown}": not a file in sources/',
        f'line 2: [09-none] "{"a" * 77}...": not a file in sources/',
    )


def test_a_quote_of_whitespace_is_empty(sources: Path) -> None:
    report = check_findings('[source: 01-log] "  "', sources)
    assert report.problems[0] == "line 1: empty quote from 01-log"


def test_command_line_exit_codes_and_last_line(
    sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    findings = Path("findings.md")
    findings.write_text(FINDINGS)
    argv = [str(findings), "--sources", "sources", "--min-sources", "4"]
    assert main([*argv, "--require-contradictions"]) == 0
    assert capsys.readouterr().out.endswith("every quote found in its source\n")
    findings.write_text(FINDINGS.replace("## Contradictions", "## Other"))
    assert main([*argv, "--require-contradictions"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == '- no "## Contradictions" section'
    assert out[-1].startswith("citations: FAILED: findings.md: 1 problem(s)")


def test_command_line_defaults_a_sources_folder_and_one_source(
    sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    findings = Path("findings.md")
    findings.write_text('[source: 01-log] "first shown on the evening of 1 November 1851"\n')
    assert main([str(findings)]) == 0
    assert capsys.readouterr().out == (
        "citations: ok: findings.md: 1 citations, 1 sources verified, "
        "every quote found in its source\n"
    )
    findings.write_text("# F\n\nNothing cited.\n")
    assert main([str(findings)]) == 1
    assert capsys.readouterr().out.splitlines()[:2] == [
        '- no citations found; cite as [source: PATH] "exact quote"',
        "- 0 distinct sources cited with a verified quote; at least 1 required",
    ]
    Path("notes").mkdir()
    (Path("notes") / "n.md").write_text("An entirely different note on lamps.")
    findings.write_text('[source: n] "entirely different note on lamps"\n')
    assert main([str(findings), "--sources", "notes"]) == 0
    assert main([str(findings)]) == 1  # not in the default folder


def test_command_line_unreadable_inputs(sources: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["missing.md", "--sources", "sources"]) == 2
    assert capsys.readouterr().out == (
        "citations: cannot read missing.md: No such file or directory\n"
    )
    assert main(["missing.md", "--sources", "nowhere"]) == 2
    assert capsys.readouterr().out == "citations: cannot read nowhere: not a folder\n"


def test_runs_as_a_module(sources: Path) -> None:
    Path("findings.md").write_text('# F\n\n[source: 01-log] "first lit in 1851"\n')
    result = subprocess.run(
        [sys.executable, "-m", "harness.research.citations", "findings.md", "--sources", "sources"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    assert result.stdout.splitlines()[0] == (
        '- line 3: quote not found in 01-log: "first lit in 1851"'
    )
