"""The claims of a findings file, carried across rounds, and whether they have settled.

A claim is a list item or paragraph that starts with its id, ``C`` and a number, and
``(key)`` when the answer rests on it::

    - C1 (key): The light was first shown in 1851 [source: s-1a2b3c4d5e6f] "first shown on
      the evening of 1 November 1851" [source: sources/03-harbour-log.md] "lit in 1851".
    - C2: The keepers left in 1988 [source: http://example.org/notice] "automated in 1988".

It runs to the next blank line, claim or heading. Each check of the findings appends one entry
to the ledger (``claims.jsonl`` in the run's folder): the claims as they stand, and which were
added, changed (text, key mark or citations) or dropped since the entry before. The
:func:`converged` check passes when the claims have not changed for ``stable_rounds`` entries
and every key claim is backed by at least ``min_sources`` independent sources (different hosts
for web sources, different files for local ones) whose quotes were found; two independent
sources of one claim whose quotes state one quantity differently (see
:mod:`harness.research.quantities`) are listed as a contradiction, and a key claim with one has
not converged.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import takewhile
from pathlib import Path

from pydantic import BaseModel, ValidationError

from harness.checks.markdown import parse_heading
from harness.core.errors import ConfigError
from harness.core.nofollow import append, read_text, write_atomic
from harness.core.redact import redact_strings
from harness.research.archive import SourceArchive
from harness.research.citations import (
    Citation,
    SourceReader,
    Verified,
    normalise,
    parse_citations,
    without_citations,
)
from harness.research.gate_config import BACKING_SOURCES
from harness.research.quantities import Difference, differences

LEDGER_FILE = "claims.jsonl"
CONTRADICTIONS = "Contradictions between sources:"
_CLAIM = re.compile(
    r"^\s*(?:[-*+]|\d+[.)])?\s*\**(?P<id>C\d+)\**\s*(?P<key>\(key\))?\s*[:.]\**\s*(?P<rest>.*)$"
)
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


class Claim(BaseModel):
    """One claim as the findings state it: its words (citations left out), whether it is a key
    claim, and its citations as ``[source, quote]`` pairs."""

    text: str
    key: bool = False
    citations: list[tuple[str, str]] = []


class LedgerEntry(BaseModel):
    """The claims after one check, and how they moved since the entry before."""

    at: str
    claims: dict[str, Claim]
    added: list[str] = []
    changed: list[str] = []
    dropped: list[str] = []

    @property
    def moved(self) -> bool:
        return bool(self.added or self.changed or self.dropped)

    def summary(self) -> str:
        """``+1 added (C3), ~1 changed (C2), -0 dropped``."""
        parts = []
        for sign, word, ids in (
            ("+", "added", self.added),
            ("~", "changed", self.changed),
            ("-", "dropped", self.dropped),
        ):
            parts.append(f"{sign}{len(ids)} {word}" + (f" ({', '.join(ids)})" if ids else ""))
        return ", ".join(parts)


def parse_claims(text: str) -> dict[str, Claim]:
    """The claims in ``text`` by id; a :class:`ConfigError` names an id used twice."""
    claims: dict[str, Claim] = {}
    current: tuple[str, bool, list[str]] | None = None

    def close() -> None:
        if current is None:
            return
        claim_id, key, lines = current
        if claim_id in claims:
            raise ConfigError(f"claim {claim_id} is stated twice")
        body = "\n".join(lines)
        citations = [(c.source, c.quote) for c in parse_citations(body)]
        words = normalise(without_citations(body))
        claims[claim_id] = Claim(text=words, key=key, citations=citations)

    for line in text.splitlines():
        match = _CLAIM.match(line)
        ends = not line.strip() or parse_heading(line) is not None or _LIST_ITEM.match(line)
        if match or ends:
            close()
            current = None
        if match:
            current = (match.group("id"), bool(match.group("key")), [match.group("rest")])
        elif current is not None:
            current[2].append(line)
    close()
    return claims


def read_ledger(path: Path, *, root: Path | None = None) -> list[LedgerEntry]:
    """The ledger's entries, oldest first (none when it does not exist yet), read without
    following a link below ``root`` (by default the ledger's folder). A last line cut short by a
    crash (no newline, not an entry) is left out; any other line that is not an entry is a
    :class:`ConfigError` naming it."""
    return _read(path, root)[0]


def _read(path: Path, root: Path | None) -> tuple[list[LedgerEntry], bool]:
    """The ledger's entries, and whether its last line was cut short (and left out)."""
    try:
        text = read_text(path, root=root)
    except FileNotFoundError:
        return [], False
    lines = text.split("\n")
    entries = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            entries.append(LedgerEntry.model_validate_json(line))
        except ValidationError as exc:
            if number == len(lines):
                return entries, True
            raise ConfigError(f"{path}: line {number} is not a ledger entry: {exc}") from None
    return entries, False


def carry_ledger(
    earlier: Path, ledger: Path, *, before: datetime | None, root: Path
) -> list[LedgerEntry]:
    """Start ``ledger`` with the entries of the ``earlier`` ledger recorded ``before`` a time (all
    of them when None), as they were recorded there; both are reached from ``root`` without
    following a link. The entries carried."""
    carried = [
        entry
        for entry in read_ledger(earlier, root=root)
        if before is None or _recorded(entry, earlier) < before
    ]
    if carried:
        write_atomic(ledger, _jsonl(carried), root=root)
    return carried


def _recorded(entry: LedgerEntry, ledger: Path) -> datetime:
    """When ``entry`` was recorded; a :class:`ConfigError` naming ``ledger`` when unreadable."""
    try:
        recorded = datetime.fromisoformat(entry.at)
    except ValueError:
        recorded = None
    if recorded is None or recorded.tzinfo is None:
        raise ConfigError(
            f"{ledger}: entry time {entry.at!r} is not an ISO 8601 time with its zone"
        )
    return recorded


def record_claims(
    path: Path, claims: dict[str, Claim], *, redact: Callable[[str], str] = str
) -> list[LedgerEntry]:
    """Append ``claims`` to the ledger at ``path``, with what moved since its last entry; the
    ledger's entries, the new one last, as written (every string through ``redact``). A last
    line cut short by a crash is dropped, not written onto."""
    claims = {
        key: Claim.model_validate(redact_strings(claim.model_dump(), redact))
        for key, claim in claims.items()
    }
    before, torn = _read(path, None)
    previous = before[-1].claims if before else {}
    entry = LedgerEntry(
        at=datetime.now(UTC).isoformat(timespec="microseconds"),  # a resume tells rounds apart
        claims=claims,
        added=[i for i in claims if i not in previous],
        changed=[i for i in claims if i in previous and previous[i] != claims[i]],
        dropped=[i for i in previous if i not in claims],
    )
    entries = [*before, entry]
    if torn:  # rewritten whole: the torn line would join the new entry and break the ledger
        write_atomic(path, _jsonl(entries))
    else:
        append(path, _jsonl([entry]))  # no link followed
    return entries


def _jsonl(entries: list[LedgerEntry]) -> bytes:
    """``entries`` as ledger lines."""
    return "".join(entry.model_dump_json() + "\n" for entry in entries).encode("utf-8")


def stable_for(entries: list[LedgerEntry]) -> int:
    """How many of the latest entries in a row moved no claim."""
    return sum(1 for _ in takewhile(lambda entry: not entry.moved, reversed(entries)))


@dataclass(frozen=True)
class Contradiction:
    """Two independent sources of one claim whose quotes state one quantity differently: the
    ``differences``, each with the figures both give."""

    claim: str
    first: Verified
    second: Verified
    differences: tuple[Difference, ...]

    def describe(self) -> str:
        figures = "; ".join(d.describe() for d in self.differences)
        return f"{self.claim}: {_said(self.first)} but {_said(self.second)} ({figures})"


def contradictions(claim_id: str, verified: Iterable[Verified]) -> list[Contradiction]:
    """Pairs of ``claim_id``'s verified citations, from different origins, whose quotes state
    one quantity differently."""
    found: list[Contradiction] = []
    items = list(verified)
    for index, first in enumerate(items):
        for second in items[index + 1 :]:
            if first.origin == second.origin:
                continue
            differ = differences(first.citation.quote, second.citation.quote)
            if differ:
                found.append(Contradiction(claim_id, first, second, differ))
    return found


@dataclass(frozen=True)
class Convergence:
    """What :func:`converged` found: ``problems`` is empty when the claims have converged."""

    entry: LedgerEntry
    stable: int
    problems: tuple[str, ...]
    contradictions: tuple[Contradiction, ...]

    @property
    def passed(self) -> bool:
        return not self.problems

    def report(self) -> str:
        """Lines for the gate's output: the round's moves, the problems, the contradictions."""
        lines = [f"{len(self.entry.claims)} claims this round: {self.entry.summary()}"]
        lines += [f"- {problem}" for problem in self.problems]
        return "\n".join([*lines, self.listed()] if self.contradictions else lines)

    def listed(self) -> str:
        """The contradictions under their heading; "" when there are none."""
        if not self.contradictions:
            return ""
        return "\n".join([CONTRADICTIONS, *(f"- {c.describe()}" for c in self.contradictions)])


def converged(
    text: str,
    ledger: Path,
    *,
    sources: Path | None,
    archive: SourceArchive | None,
    stable_rounds: int,
    min_sources: int = BACKING_SOURCES,
    redact: Callable[[str], str] = str,
) -> Convergence:
    """Record ``text``'s claims in ``ledger`` (through ``redact``) and judge whether they have
    converged."""
    claims = parse_claims(text)
    entries = record_claims(ledger, claims, redact=redact)
    stable = stable_for(entries)
    problems: list[str] = []
    if not claims:
        problems.append('no claims found; state each as "- C1 (key): ..." with its citations')
    if stable < stable_rounds:
        problems.append(
            f"the claims are not yet settled: unchanged for {stable} rounds, {stable_rounds} needed"
        )
    reader = SourceReader(sources, archive)
    found: list[Contradiction] = []
    for claim_id, claim in claims.items():
        checked = [reader.verify(Citation(source, quote, 0)) for source, quote in claim.citations]
        verified = [item for item in checked if isinstance(item, Verified)]
        disputes = contradictions(claim_id, verified)
        found += disputes
        if not claim.key:
            continue
        origins = {v.origin for v in verified}
        if len(origins) < min_sources:
            problems.append(
                f"key claim {claim_id} has {len(origins)} independent sources with a verified "
                f"quote; at least {min_sources} required"
            )
        if disputes:
            problems.append(f"the sources of key claim {claim_id} disagree")
    return Convergence(entries[-1], stable, tuple(problems), tuple(found))


def _said(item: Verified) -> str:
    return f'{item.source} ({item.origin}) says "{item.citation.quote}"'
