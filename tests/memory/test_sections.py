"""The Markdown plumbing shared by SKILL.md and progress.md."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from harness.core.text import one_line
from harness.memory.sections import (
    bullet_items,
    hanging,
    heading_key,
    heading_of,
    numbered,
    paragraph,
    split_sections,
    verbatim,
)
from harness.memory.text_fields import Section


def test_split_sections_keeps_line_numbers_and_ignores_deeper_headings() -> None:
    head, sections = split_sections(numbered("intro\n## One ##\na\n### sub\n##Two\n\nb"))

    assert [line.text for line in head] == ["intro"]
    assert [(s.heading, s.line) for s in sections] == [("One", 2), ("Two", 5)]
    assert [(line.number, line.text) for line in sections[0].lines] == [(3, "a"), (4, "### sub")]
    assert [line.number for line in sections[1].lines] == [6, 7]


def test_bullet_items_take_bullets_continuations_and_prose() -> None:
    lines = numbered(
        "- one\n  more of one\n+ two\n\n3) three\n\nprose para\nstill prose\n\n  - nested"
    )

    assert bullet_items(lines) == [
        "one\nmore of one",
        "two",
        "three",
        "prose para\nstill prose",
        "- nested",
    ]


def test_text_shapes() -> None:
    assert one_line("  a\n b\t c  ") == "a b c"
    assert paragraph("  a \n\n   b  \n") == "a\nb"
    assert verbatim("\n\n  a  \n\n b\n \n") == "  a  \n\n b"
    assert verbatim("a\r\nb\rc") == "a\nb\nc"
    assert hanging("- Summary: ", "x\ny") == "- Summary: x\n  y"
    assert hanging("Resume point: ", "") == "Resume point:"
    assert heading_key("  Don’t_Do-This: ") == "don't do this"


def test_section_render_and_normalisation() -> None:
    section = Section(heading=" Run \n", body="\n\nBranch: x\n\n")

    assert section == Section(heading="Run", body="Branch: x")
    assert section.render() == "## Run\n\nBranch: x"
    assert Section(heading="Empty").render() == "## Empty"


@pytest.mark.parametrize(
    ("line", "heading"),
    [("## C#", "C#"), ("## One ##", "One"), ("## a # ##", "a #"), ("##x", "x"), ("### x", None)],
)
def test_a_closing_run_of_hashes_needs_a_space_before_it(line: str, heading: str | None) -> None:
    assert heading_of(line) == heading


@pytest.mark.parametrize("heading", ["C#", "a #", "x ##", "#", "# #"])
def test_a_heading_with_hashes_reads_back_as_written(heading: str) -> None:
    _, sections = split_sections(numbered(Section(heading=heading, body="b").render()))

    assert [(s.heading, [line.text for line in s.lines]) for s in sections] == [
        (heading, ["", "b"])
    ]


def test_a_body_line_that_would_start_a_section_is_refused() -> None:
    with pytest.raises(ValidationError, match="'## Next' would start a section of its own"):
        Section(heading="Decisions", body="keep it\n## Next\nmore")

    assert Section(heading="Decisions", body="### Detail\n #### x").body == "### Detail\n #### x"
