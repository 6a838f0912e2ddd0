"""Citations in research findings, checked against the sources they name.

A citation is a source in brackets followed by a quote::

    The light was first shown in 1851 [source: sources/03-harbour-log.md] "first shown on the
    evening of 1 November 1851".

The source may be a path (relative to where the check runs, or to the folder holding the
sources folder) or a file name inside the sources folder, with or without ``.md``;
``[03-harbour-log] "..."`` works too. Straight or curly double quotes both delimit a quote. A
quote passes when it occurs in the cited document once runs of whitespace, typographic quotes
and dashes are made uniform; anything else must match exactly.

The command line checks one findings file, for use as a command gate::

    python -m harness.checks.citations findings.md --sources sources --min-sources 4 --require-contradictions

It exits 0 when every check passes, 1 when one fails and 2 when a file cannot be read.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath

from harness.checks.markdown import EXIT_FAILED, EXIT_PASSED, EXIT_UNREADABLE, read_text, section
from harness.core.errors import ConfigError

QUOTE_SHOWN = 80
"""Characters of a quote repeated in a problem message."""

_CITATION = re.compile(
    r"\[(?:source:\s*)?(?P<source>[^\]\n]+?)\s*\]\s*[\"“](?P<quote>(?:(?!\n\s*\n)[^\"”])+)[\"”]"
)
_UNIFORM = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"', "–": "-", "—": "-"})


@dataclass(frozen=True)
class Citation:
    """One ``[source: ...] "quote"`` in the findings; ``line`` is where it starts (1-based)."""

    source: str
    quote: str
    line: int


@dataclass(frozen=True)
class FindingsReport:
    """What the checks found: ``problems`` is empty when the findings pass."""

    citations: tuple[Citation, ...]
    sources_verified: tuple[Path, ...]
    problems: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return not self.problems

    @property
    def message(self) -> str:
        """One line: what passed, or how many problems and the first of them."""
        counts = f"{len(self.citations)} citations, {len(self.sources_verified)} sources verified"
        if self.passed:
            return f"{counts}, every quote found in its source"
        return f"{len(self.problems)} problem(s) in {counts}; first: {self.problems[0]}"


def parse_citations(text: str) -> list[Citation]:
    """Every citation in ``text``, in order."""
    return [
        Citation(
            source=match.group("source").strip(),
            quote=" ".join(match.group("quote").split()),
            line=text.count("\n", 0, match.start()) + 1,
        )
        for match in _CITATION.finditer(text)
    ]


def normalise(text: str) -> str:
    """``text`` with runs of whitespace as one space and typographic quotes and dashes plain."""
    return " ".join(text.translate(_UNIFORM).split())


def resolve_source(name: str, sources: Path) -> Path | None:
    """The file in ``sources`` that ``name`` cites, or None when there is no such file there.

    ``name`` is a path relative to the current folder or to the folder holding ``sources``, or a
    file name inside ``sources`` with or without ``.md``.
    """
    if PurePath(name).is_absolute() or ".." in PurePath(name).parts:
        return None
    folder = sources.resolve()
    candidates = (Path(name), sources.parent / name, sources / name, sources / f"{name}.md")
    for candidate in candidates:
        resolved = candidate.resolve()
        if resolved.is_file() and resolved.is_relative_to(folder):
            return resolved
    return None


def check_findings(
    text: str,
    sources: Path,
    *,
    min_sources: int = 1,
    require_contradictions: bool = False,
) -> FindingsReport:
    """Verify every quote against its source, count distinct sources, look for Contradictions."""
    citations = parse_citations(text)
    problems: list[str] = []
    verified: dict[Path, None] = {}  # sources with at least one quote found, in citing order
    documents: dict[Path, str] = {}
    for citation in citations:
        path = resolve_source(citation.source, sources)
        if path is None:
            problems.append(
                f"line {citation.line}: [{citation.source}] is not a file in {sources}/"
            )
            continue
        if not normalise(citation.quote):
            problems.append(f"line {citation.line}: empty quote from {citation.source}")
            continue
        if path not in documents:
            documents[path] = normalise(path.read_text(encoding="utf-8", errors="replace"))
        if normalise(citation.quote) in documents[path]:
            verified[path] = None
        else:
            problems.append(
                f"line {citation.line}: quote not found in {citation.source}: "
                f'"{_shorten(citation.quote)}"'
            )
    if not citations:
        problems.append('no citations found; cite as [source: PATH] "exact quote"')
    if len(verified) < min_sources:
        problems.append(
            f"{len(verified)} distinct sources cited with a verified quote; "
            f"at least {min_sources} required"
        )
    if require_contradictions:
        body = section(text, "Contradictions")
        if body is None:
            problems.append('no "## Contradictions" section')
        elif not body:
            problems.append('the "Contradictions" section is empty')
    return FindingsReport(tuple(citations), tuple(verified), tuple(problems))


def _shorten(quote: str) -> str:
    return quote if len(quote) <= QUOTE_SHOWN else quote[: QUOTE_SHOWN - 3] + "..."


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m harness.checks.citations",
        description="Check the citations in a findings file against the sources they quote.",
        epilog="Exit codes: 0 every check passed, 1 a check failed, 2 a file cannot be read.",
    )
    parser.add_argument("findings", type=Path, help="the findings file (Markdown)")
    parser.add_argument("--sources", type=Path, default=Path("sources"), help="sources folder")
    parser.add_argument("--min-sources", type=int, default=1, help="distinct sources required")
    parser.add_argument(
        "--require-contradictions",
        action="store_true",
        help='require a non-empty "## Contradictions" section',
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if not args.sources.is_dir():
        print(f"citations: cannot read {args.sources}: not a folder")
        return EXIT_UNREADABLE
    try:
        text = read_text(args.findings)
    except ConfigError as exc:
        print(f"citations: {exc}")
        return EXIT_UNREADABLE
    report = check_findings(
        text,
        args.sources,
        min_sources=args.min_sources,
        require_contradictions=args.require_contradictions,
    )
    for problem in report.problems:
        print(f"- {problem}")
    print(f"citations: {'ok' if report.passed else 'FAILED'}: {args.findings}: {report.message}")
    return EXIT_PASSED if report.passed else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
