"""Citations in research findings, checked against the sources they name.

A citation is a source in brackets followed by a quote::

    The light was first shown in 1851 [source: sources/03-harbour-log.md] "first shown on the
    evening of 1 November 1851".

The source may be a path (relative to where the check runs, or to the folder holding the
sources folder) or a file name inside the sources folder, with or without ``.md``;
``[03-harbour-log] "..."`` works too; a local PDF or HTML file is read as a fetched one
would be. With a run's archive (see :mod:`harness.research.archive`),
it may also be a fetched source's id (``[source: s-1a2b3c4d5e6f]``) or the address it was
fetched from; a web source that was never fetched fails. Straight or curly double quotes both
delimit a quote. A quote passes when it occurs in the cited document's text (an archived
source's text derived afresh from its archived bytes) once runs of whitespace (no-break spaces
included), typographic quotes, dashes and the ellipsis character are made uniform; anything
else must match exactly.

A quote is evidence only when the request did not plant it: it must hold at least
:data:`MIN_QUOTE_WORDS` words and :data:`MIN_QUOTE_CHARS` characters (a word or a letter is found
anywhere); a quote that the address asked for holds (its path, its query string, decoded) fails;
in a fetched page, what echoes the address (a query string a page repeats: "results for ...")
is taken out of the page's text before a quote is looked for; and an archived web search's
answer is a lead, never a source (its results carry the query): fetch the page and cite it.

The command line checks one findings file, for use as a command gate::

    harness check citations findings.md --sources sources --min-sources 4 --require-contradictions

It exits 0 when every check passes, 1 when one fails and 2 when a file cannot be read.
"""

from __future__ import annotations

import argparse
import hashlib
import mimetypes
import re
import sys
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path, PurePath
from urllib.parse import urlsplit

from harness.checks.markdown import EXIT_FAILED, EXIT_PASSED, EXIT_UNREADABLE, read_text, section
from harness.core.errors import ConfigError, ToolError
from harness.research.archive import ID_DIGITS, ID_PREFIX, SourceArchive
from harness.research.echoes import echoes, in_request, normalise, unechoed
from harness.research.extract import HTML_TYPES, PDF_TYPES, renditions
from harness.research.gate_config import CITED_SOURCES

QUOTE_SHOWN = 80
"""Characters of a quote repeated in a problem message."""

MIN_QUOTE_WORDS = 3
MIN_QUOTE_CHARS = 15
"""A quote shorter than this many words or characters (once normalised) proves nothing."""


_CITATION = re.compile(
    r"\[(?:source:\s*)?(?P<source>[^\]\n]+?)\s*\]\s*[\"“](?P<quote>(?:(?!\n\s*\n)[^\"”])+)[\"”]"
)
_ARCHIVED = re.compile(rf"^(?:{ID_PREFIX}[0-9a-f]{{{ID_DIGITS}}}|https?://\S+)$")


@dataclass(frozen=True)
class Citation:
    """One ``[source: ...] "quote"`` in the findings; ``line`` is where it starts (1-based)."""

    source: str
    quote: str
    line: int


@dataclass(frozen=True)
class Verified:
    """A citation whose quote was found: in which ``source`` (an archived source's id, or a
    local file's path) and its ``origin`` (the host and port where a web source's bytes were
    first fetched, a local file's path), which says whether two sources are independent."""

    citation: Citation
    source: str
    origin: str


@dataclass(frozen=True)
class FindingsReport:
    """What the checks found: ``problems`` is empty when the findings pass."""

    citations: tuple[Citation, ...]
    sources_verified: tuple[str, ...]
    problems: tuple[str, ...]
    verified: tuple[Verified, ...] = ()

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


def without_citations(text: str) -> str:
    """``text`` with each citation (source and quote) taken out."""
    return _CITATION.sub(" ", text)


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


@dataclass(eq=False)
class SourceReader:
    """Checks quotes against the sources they cite: local files in ``sources``, fetched ones
    in ``archive``; each document is read and normalised once.

    With ``keep_local``, each local file cited is kept in ``archive`` too (as
    ``file:<path>``, once per content) and its quotes are checked against the archived bytes,
    so the run holds every byte its quotes were checked against.
    """

    sources: Path | None
    archive: SourceArchive | None = None
    _: KW_ONLY
    keep_local: bool = False
    _texts: dict[str, tuple[str, ...]] = field(default_factory=dict, init=False, repr=False)

    def verify(self, citation: Citation) -> Verified | str:
        """Where ``citation``'s quote was found, or the problem (naming the citation)."""
        named = f'line {citation.line}: [{citation.source}] "{_shorten(citation.quote)}"'
        if _ARCHIVED.match(citation.source):
            if self.archive is None:
                return f"{named}: a fetched source, but no archive of fetched sources was given"
            return self._verify_archived(citation, named, self.archive)
        if self.sources is None:
            return f"{named}: not a fetched source's id or address"
        path = resolve_source(citation.source, self.sources)
        if path is None:
            return f"{named}: not a file in {self.sources}/"
        if short := _too_short(citation):
            return short
        key = str(path)
        if key not in self._texts:
            try:
                texts = self._local_texts(path, self.sources)
                self._texts[key] = tuple(normalise(text) for text in texts)
            except (ConfigError, ToolError) as exc:
                return f"{named}: {exc}"
        if not _found(citation.quote, self._texts[key]):
            return (
                f"line {citation.line}: quote not found in {citation.source}: "
                f'"{_shorten(citation.quote)}"'
            )
        return Verified(citation, key, key)

    def _local_texts(self, path: Path, sources: Path) -> tuple[str, ...]:
        """A local file's texts: a PDF's or an HTML page's as a fetched one's, else its text."""
        guessed = mimetypes.guess_type(path.name)[0] or ""
        kind = guessed if guessed in PDF_TYPES or guessed in HTML_TYPES else "text/plain"
        body = path.read_bytes()
        if self.keep_local and self.archive is not None:
            address = f"file:{path.relative_to(sources.resolve().parent).as_posix()}"
            record = self.archive.find(address)
            if record is None or record.sha256 != hashlib.sha256(body).hexdigest():
                record = self.archive.add(
                    address, body, headers={"content-type": kind}, encoding="utf-8", kind="file"
                )
            body = self.archive.body(record)
        return renditions(body, kind, "utf-8")

    def _verify_archived(
        self, citation: Citation, named: str, archive: SourceArchive
    ) -> Verified | str:
        record = archive.find(citation.source)
        if record is None:
            return f"{named}: never fetched in this run (not in {archive.folder})"
        if short := _too_short(citation):
            return short
        if record.kind == "search":
            return (
                f"{named}: {record.id} is a web search's answer, which carries the query: a lead, "
                "not a source (fetch the page it names and cite that)"
            )
        asked = [record.url, record.requested]
        if record.kind != "file" and in_request(normalise(citation.quote), asked):
            return f"{named}: the quote is in the address asked for ({record.requested})"
        if record.id not in self._texts:
            try:
                texts = archive.texts(record)
            except (ConfigError, ToolError) as exc:
                return f"{named}: {exc}"
            cut = echoes(asked) if record.kind != "file" else ()
            self._texts[record.id] = tuple(unechoed(normalise(t), cut) for t in texts)
        if not _found(citation.quote, self._texts[record.id]):
            return f"{named}: quote not found in {record.id} ({record.url})"
        first = archive.first(record)  # the same bytes on two hosts are one source
        return Verified(citation, record.id, urlsplit(first.url).netloc.lower() or first.url)


def check_findings(
    text: str,
    sources: Path | None,
    *,
    archive: SourceArchive | None = None,
    keep_local: bool = False,
    min_sources: int = CITED_SOURCES,
    require_contradictions: bool = False,
) -> FindingsReport:
    """Verify every quote against its source, count distinct sources, look for Contradictions.

    ``sources`` is the folder of local documents (None: there are none); ``archive`` holds the
    sources fetched in this run; with ``keep_local`` the local files cited are kept there too.
    """
    citations = parse_citations(text)
    reader = SourceReader(sources, archive, keep_local=keep_local)
    problems: list[str] = []
    found: list[Verified] = []
    for citation in citations:
        outcome = reader.verify(citation)
        if isinstance(outcome, str):
            problems.append(outcome)
        else:
            found.append(outcome)
    verified = tuple(dict.fromkeys(item.source for item in found))  # in citing order
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
    return FindingsReport(tuple(citations), verified, tuple(problems), tuple(found))


def _too_short(citation: Citation) -> str | None:
    """The problem with a quote too short to prove anything (or empty); None when long enough."""
    quote = normalise(citation.quote)
    if not quote:
        return f"line {citation.line}: empty quote from {citation.source}"
    if len(quote.split()) < MIN_QUOTE_WORDS or len(quote) < MIN_QUOTE_CHARS:
        return (
            f'line {citation.line}: quote from {citation.source} too short to verify: "{quote}" '
            f"(at least {MIN_QUOTE_WORDS} words and {MIN_QUOTE_CHARS} characters)"
        )
    return None


def _found(quote: str, texts: tuple[str, ...]) -> bool:
    wanted = normalise(quote)
    return any(wanted in text for text in texts)


def _shorten(quote: str) -> str:
    return quote if len(quote) <= QUOTE_SHOWN else quote[: QUOTE_SHOWN - 3] + "..."


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harness check citations",
        description="Check the citations in a findings file against the sources they quote.",
        epilog="Exit codes: 0 every check passed, 1 a check failed, 2 a file cannot be read.",
    )
    parser.add_argument("findings", type=Path, help="the findings file (Markdown)")
    parser.add_argument(
        "--sources", type=Path, help="sources folder (default: sources, none with --archive)"
    )
    parser.add_argument("--archive", type=Path, help="the run's archive of fetched sources")
    parser.add_argument(
        "--min-sources", type=int, default=CITED_SOURCES, help="distinct sources required"
    )
    parser.add_argument(
        "--require-contradictions",
        action="store_true",
        help='require a non-empty "## Contradictions" section',
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.sources is None and args.archive is None:
        args.sources = Path("sources")
    for folder in (args.sources, args.archive):
        if folder is not None and not folder.is_dir():
            print(f"citations: cannot read {folder}: not a folder")
            return EXIT_UNREADABLE
    try:
        text = read_text(args.findings)
    except ConfigError as exc:
        print(f"citations: {exc}")
        return EXIT_UNREADABLE
    report = check_findings(
        text,
        args.sources,
        archive=SourceArchive(args.archive) if args.archive else None,
        min_sources=args.min_sources,
        require_contradictions=args.require_contradictions,
    )
    for problem in report.problems:
        print(f"- {problem}")
    print(f"citations: {'ok' if report.passed else 'FAILED'}: {args.findings}: {report.message}")
    return EXIT_PASSED if report.passed else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
