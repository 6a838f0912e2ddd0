"""Markdown structure: headings outside fenced code, section bodies, reading a checker's input."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.checks.markdown import (
    Heading,
    headings,
    parse_heading,
    prose_lines,
    read_text,
    section,
    section_body,
)
from harness.core.errors import ConfigError

DOCUMENT = """\
# Title #

Intro.

```sh
# a shell comment, not a heading
```

## Contradictions

A.

~~~
## inside a tilde fence
```
still code
~~~

### Detail

B.

## Next

C.
"""


def test_parse_heading_levels_and_closing_hashes() -> None:
    assert parse_heading("### Detail ##", 7) == Heading(7, 3, "Detail")
    assert parse_heading("#NoSpace") is None
    assert parse_heading("####### seven") is None
    assert parse_heading("text # not at start") is None


def test_headings_skip_both_kinds_of_fence() -> None:
    assert list(headings(DOCUMENT)) == [
        Heading(1, 1, "Title"),
        Heading(9, 2, "Contradictions"),
        Heading(19, 3, "Detail"),
        Heading(23, 2, "Next"),
    ]


def test_prose_lines_leave_out_fences_and_their_contents() -> None:
    numbers = [n for n, _ in prose_lines(DOCUMENT)]
    assert numbers[:4] == [1, 2, 3, 4]
    assert not {5, 6, 7, 13, 14, 15, 16, 17} & set(numbers)
    assert 9 in numbers


def test_section_body_keeps_its_code_and_subsections_up_to_the_next_heading() -> None:
    body = section_body(DOCUMENT, Heading(9, 2, "Contradictions"))
    assert body == ("A.\n\n~~~\n## inside a tilde fence\n```\nstill code\n~~~\n\n### Detail\n\nB.")
    assert section_body(DOCUMENT, Heading(23, 2, "Next")) == "C."


def test_section_by_title_ignores_case_and_returns_none_when_missing() -> None:
    text = "# T\n\n## Contradictions\n\nA.\n\n### Detail\n\nB.\n\n## Next\n\nC.\n"
    assert section(text, "contradictions") == "A.\n\n### Detail\n\nB."
    assert section(text, "Missing") is None
    assert section("# T\n\n## Empty\n\n## Next\n\nx\n", "empty") == ""


def test_a_heading_inside_a_fence_is_not_a_section() -> None:
    text = "# Findings\n\n```markdown\n## Contradictions\n\nNone yet.\n```\n"
    assert section(text, "Contradictions") is None


def test_read_text_names_the_file_it_cannot_read(tmp_path: Path) -> None:
    good = tmp_path / "good.md"
    good.write_text("caf\u00e9\n", encoding="utf-8")
    assert read_text(good) == "caf\u00e9\n"
    missing = tmp_path / "missing.md"
    with pytest.raises(ConfigError, match=f"^cannot read {missing}: No such file or directory$"):
        read_text(missing)
    binary = tmp_path / "latin1.md"
    binary.write_bytes(b"caf\xe9")
    with pytest.raises(ConfigError, match=f"^cannot read {binary}: 'utf-8' codec can't decode"):
        read_text(binary)
    with pytest.raises(ConfigError, match="Is a directory"):
        read_text(tmp_path)
