"""Every link between the documentation's pages reaches a file, and its ``#anchor`` a heading there.

The pages are the ones whose commands tests/test_docs_commands.py runs: README.md,
examples/README.md and docs/*.md. An anchor is a heading's slug as GitHub makes it (lower case,
punctuation but ``-`` dropped, spaces as ``-``), so a renamed section fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.test_docs_commands import PAGES, ROOT

_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#+ (.*)$", re.MULTILINE)


def prose(page: Path) -> str:
    """The page without its code blocks (a ``# comment`` there is no heading)."""
    return _FENCE.sub("", page.read_text(encoding="utf-8"))


def slug(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def headings(page: Path) -> set[str]:
    return {slug(heading) for heading in _HEADING.findall(prose(page))}


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in _LINK.findall(prose(page)):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in headings(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.name}")
    return broken


def test_slugs_are_github_s() -> None:
    assert slug("Bounds: what the watcher promises against what reaches it") == (
        "bounds-what-the-watcher-promises-against-what-reaches-it"
    )
    assert slug('Claude Code (`runner = "claude-code"`)') == "claude-code-runner--claude-code"


def test_a_broken_link_and_a_missing_anchor_are_found(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other\n\n## A part\n\n```bash\n# not a heading\n```\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md#a-part) [ok](#top) [web](https://example.com/x#y)\n"
        "[gone](missing.md) [no](other.md#not-a-heading) [no](other.md#b-part)\n\n# Top\n"
    )
    assert broken_links(page) == [
        "missing.md: no such file",
        "other.md#not-a-heading: no heading #not-a-heading in other.md",
        "other.md#b-part: no heading #b-part in other.md",
    ]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_link_of_a_page_reaches_its_file_and_heading(page: Path) -> None:
    assert broken_links(page) == []
