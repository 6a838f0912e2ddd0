"""Content checks: each pure function on passing and failing text, and the command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.checks.content import (
    check_banned,
    check_facts,
    check_links,
    check_structure,
    check_words,
    main,
    word_count,
)

ROOT = Path(__file__).resolve().parents[2]

PIECE = """\
# The library reopens

Harwick Community Library reopens on Saturday 12 April 2025 at 10:00.

## What is new

A step-free entrance, a lift and 12 public computers.

## Opening day

Story time at 11:00 with [Dana Okafor](https://example.org/dana).
"""


def test_word_count_skips_headings_markup_code_and_link_targets() -> None:
    text = """\
# A title of five words

Two *words* - here [and there](https://example.org/a/very/long/path).

```
code is not counted at all
```
£1.2 million, step-free.
"""
    assert word_count(text) == 8


@pytest.mark.parametrize(
    ("low", "high", "passed", "words"),
    [(5, 30, True, "27 words (5-30)"), (28, None, False, "add 1"), (None, 23, False, "cut 4")],
)
def test_words_range(low: int | None, high: int | None, passed: bool, words: str) -> None:
    result = check_words(PIECE, min_words=low, max_words=high)
    assert result.passed is passed
    assert words in result.message


def test_facts_present_ignoring_case_and_line_breaks() -> None:
    text = "Opens on Saturday 12\nApril 2025; head librarian PRIYA NAIR."
    passed, message = check_facts(text, ["12 April 2025", "Priya Nair"])
    assert passed
    assert message == "all 2 required facts present"


def test_missing_facts_are_named() -> None:
    passed, message = check_facts(PIECE, ["12 April 2025", "£1.2 million", "Priya Nair"])
    assert not passed
    assert message == "2 of 3 required facts missing: '£1.2 million'; 'Priya Nair'"


def test_banned_phrases_found_with_their_lines() -> None:
    text = "# Title\n\nA World-Class library.\n\nTruly world-class,\nstate-of-the-art.\n"
    passed, message = check_banned(text, ["world-class", "state-of-the-art", "unmissable"])
    assert not passed
    assert "'world-class' (line 3, 5)" in message
    assert "'state-of-the-art' (line 6)" in message
    assert "unmissable" not in message


def test_banned_phrases_match_whole_words_only() -> None:
    passed, message = check_banned("The bestseller list.", ["best"])
    assert passed
    assert message == "none of 1 banned phrases used"


def test_banned_phrase_across_a_line_break() -> None:
    assert not check_banned("it is like never\nbefore", ["like never before"]).passed


def test_structure_passes_with_a_title_and_sections() -> None:
    assert check_structure(PIECE, min_sections=2) == (True, "one title and 2 sections")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Intro\n\n## A\n\ntext\n", "needs exactly one H1 title ('# ...'), found 0"),
        ("# A\n\n# B\n\n## C\n\nx\n", "found 2 (line 1, line 3)"),
        ("Lead-in first.\n\n# Title\n\n## A\n\nx\n", "the H1 title (line 3) must come first"),
        ("# T\n\n## A\n\ntext\n", "1 '## ' sections; needs at least 2"),
        ("# T\n\n## A\n\n## B\n\nx\n", "empty sections: 'A' (line 3)"),
    ],
)
def test_structure_failures_say_what_is_wrong(text: str, expected: str) -> None:
    passed, message = check_structure(text, min_sections=2)
    assert not passed
    assert expected in message


def test_structure_ignores_hashes_inside_code_and_counts_subsections_as_content() -> None:
    text = "# T\n\n```\n# not a title\n```\n\n## A\n\n### Detail\n\nx\n\n## B\n\ny\n"
    assert check_structure(text, min_sections=2).passed


def test_structure_counts_a_code_block_as_section_content() -> None:
    text = "# T\n\n## Example\n\n```sh\n## run it\nmake\n```\n\n## B\n\ny\n"
    assert check_structure(text, min_sections=2) == (True, "one title and 2 sections")


def test_links_well_formed() -> None:
    text = (
        "See [the page](https://www.harwick.gov.uk/library), [mail](mailto:desk@harwick.gov.uk),\n"
        '[notes](docs/notes.md#hours "Hours"), <https://example.org> and [ref][lib].\n\n'
        "[lib]: https://example.org/library\n"
    )
    assert check_links(text) == (True, "5 link(s), all well-formed")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[](https://example.org)", "has no link text"),
        ("[page]()", "has an empty target"),
        ("[page](https://exa mple.org)", "has a space in its target"),
        ("[page](https://)", "has no host in its URL"),
        ("[page](https://harwick)", "has an incomplete host 'harwick'"),
        ("[page](www.harwick.gov.uk)", "lacks its scheme (https://)"),
        ("[mail](mailto:)", "has no address after mailto:"),
        ("[page](https://example.org", "is not closed with ')'"),
        ("[page][missing]", "has no [missing]: definition"),
    ],
)
def test_malformed_links_are_named(text: str, expected: str) -> None:
    passed, message = check_links(f"# T\n\n{text}\n")
    assert not passed
    assert expected in message
    assert "line 3" in message


def test_command_line_passes_and_fails_with_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    draft = tmp_path / "draft.md"
    draft.write_text(PIECE)
    assert main(["words", "--min", "5", "--max", "30", str(draft)]) == 0
    assert capsys.readouterr().out == f"words: ok: {draft}: 27 words (5-30)\n"
    assert main(["facts", "--require", "Priya Nair", str(draft)]) == 1
    assert capsys.readouterr().out == (
        f"facts: FAILED: {draft}: 1 of 1 required facts missing: 'Priya Nair'\n"
    )
    assert main(["structure", "--min-sections", "3", str(draft)]) == 1
    assert main(["banned", "--phrase", "world-class", str(draft)]) == 0
    assert main(["links", str(draft)]) == 0


def test_command_line_reports_an_unreadable_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "draft.md"
    assert main(["links", str(missing)]) == 2
    assert capsys.readouterr().out == f"links: cannot read {missing}: No such file or directory\n"


def test_command_line_words_needs_a_bound(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["words", "draft.md"])
    assert stop.value.code == 2
    assert "give --min, --max or both" in capsys.readouterr().err


def test_runs_as_a_module(tmp_path: Path) -> None:
    (tmp_path / "draft.md").write_text("# Title\n\nToo short.\n")
    result = subprocess.run(
        [sys.executable, "-m", "harness.checks.content", "words", "--min", "150", "draft.md"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    assert result.stdout == "words: FAILED: draft.md: 2 words; needs at least 150: add 148\n"
