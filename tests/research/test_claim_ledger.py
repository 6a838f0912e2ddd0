"""The claim ledger: claims parsed from findings, their moves per round, and convergence."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from harness.core.errors import ConfigError
from harness.core.nofollow import UnsafePath
from harness.research.claim_ledger import (
    Claim,
    Convergence,
    carry_ledger,
    converged,
    parse_claims,
    read_ledger,
    record_claims,
    stable_for,
)

FINDINGS = """\
# Findings

Opening words that are no claim [log] "first lit".

- C1 (key): The light was first lit in 1851 [log] "first lit on 1 November 1851"
  [gazette] "lit in 1851, was rebuilt".
- **C2**: The fire of 1907 began in the oil store
  [inquiry] "began in the oil store".
- a list item that is no claim
C3. A paragraph claim [diary] "the keepers left"

## Contradictions
C4: under a heading [log] "x"
"""

SOURCES = {
    "log.md": "The lamp was first lit on 1 November 1851 by the keeper.",
    "gazette.md": "The light, lit in 1851, was rebuilt in 1880.",
    "inquiry.md": "The fire began in the oil store at night.",
    "diary.md": "In 1988 the keepers left for good.",
    "survey.md": "The light was first lit in 1852, the survey says.",
}


@pytest.fixture
def sources(tmp_path: Path) -> Path:
    folder = tmp_path / "sources"
    folder.mkdir()
    for name, text in SOURCES.items():
        (folder / name).write_text(text)
    return folder


def test_claims_are_parsed_with_their_key_mark_and_citations() -> None:
    claims = parse_claims(FINDINGS)
    assert list(claims) == ["C1", "C2", "C3", "C4"]
    assert claims["C1"] == Claim(
        text="The light was first lit in 1851 .",
        key=True,
        citations=[
            ("log", "first lit on 1 November 1851"),
            ("gazette", "lit in 1851, was rebuilt"),
        ],
    )
    assert claims["C2"] == Claim(
        text="The fire of 1907 began in the oil store .",
        citations=[("inquiry", "began in the oil store")],
    )
    assert claims["C3"].citations == [("diary", "the keepers left")]
    assert claims["C4"].text == "under a heading"


def test_a_claim_stated_twice_is_named() -> None:
    with pytest.raises(ConfigError, match="claim C1 is stated twice"):
        parse_claims("- C1: a\n- C1: b\n")


def test_each_record_says_what_moved(tmp_path: Path) -> None:
    ledger = tmp_path / "claims.jsonl"
    first = record_claims(ledger, parse_claims(FINDINGS))[-1]
    assert (first.added, first.changed, first.dropped) == (["C1", "C2", "C3", "C4"], [], [])
    same = record_claims(ledger, parse_claims(FINDINGS))[-1]
    assert not same.moved
    assert same.summary() == "+0 added, ~0 changed, -0 dropped"
    edited = FINDINGS.replace("1907", "1908").replace("C3.", "C5.").replace("(key)", "")
    moved = record_claims(ledger, parse_claims(edited))[-1]
    assert (moved.added, moved.changed, moved.dropped) == (["C5"], ["C1", "C2"], ["C3"])
    assert moved.summary() == "+1 added (C5), ~2 changed (C1, C2), -1 dropped (C3)"
    assert [e.moved for e in read_ledger(ledger)] == [True, False, True]
    assert stable_for(read_ledger(ledger)) == 0
    record_claims(ledger, parse_claims(edited))
    record_claims(ledger, parse_claims(edited))
    assert stable_for(read_ledger(ledger)) == 2


def test_a_changed_citation_is_a_changed_claim(tmp_path: Path) -> None:
    ledger = tmp_path / "claims.jsonl"
    record_claims(ledger, parse_claims(FINDINGS))
    moved = record_claims(
        ledger, parse_claims(FINDINGS.replace('"lit in 1851, was rebuilt"', '"lit in"'))
    )[-1]
    assert moved.changed == ["C1"]


AGREED = """\
- C1 (key): First lit in 1851 [log] "first lit on 1 November 1851" [gazette] "lit in 1851, was rebuilt"
- C2: The fire began in the oil store [inquiry] "began in the oil store"
"""


def test_claims_converge_once_unchanged_for_k_rounds(tmp_path: Path, sources: Path) -> None:
    ledger = tmp_path / "claims.jsonl"
    outcomes = []
    for _ in range(3):
        found = converged(AGREED, ledger, sources=sources, archive=None, stable_rounds=2)
        outcomes.append((found.passed, found.stable))
    assert outcomes == [(False, 0), (False, 1), (True, 2)]
    assert found.report() == "2 claims this round: +0 added, ~0 changed, -0 dropped"
    moved = converged(AGREED.replace("First lit", "First shown"), ledger, sources=sources, archive=None,
                      stable_rounds=2)  # fmt: skip
    assert (moved.passed, moved.stable) == (False, 0)
    assert moved.entry.summary() == "+0 added, ~1 changed (C1), -0 dropped"
    assert moved.problems == ("the claims are not yet settled: unchanged for 0 rounds, 2 needed",)


def test_a_key_claim_needs_two_independent_verified_sources(tmp_path: Path, sources: Path) -> None:
    one = '- C1 (key): First lit in 1851 [log] "first lit on 1 November 1851" [gazette] "lit in 1852"\n'
    ledger = tmp_path / "claims.jsonl"
    for _ in range(2):
        found = converged(one, ledger, sources=sources, archive=None, stable_rounds=1)
    assert found.problems == (
        "key claim C1 has 1 independent sources with a verified quote; at least 2 required",
    )
    twice = (
        '- C1 (key): 1851 [log] "first lit on 1 November 1851" [sources/log.md] "by the keeper"\n'
    )
    found = converged(
        twice, tmp_path / "other.jsonl", sources=sources, archive=None, stable_rounds=1
    )
    assert "key claim C1 has 1 independent sources" in found.problems[-1]


def test_sources_that_disagree_on_a_number_stop_convergence(tmp_path: Path, sources: Path) -> None:
    disputed = AGREED.replace(
        '[gazette] "lit in 1851, was rebuilt"', '[survey] "first lit in 1852"'
    )
    ledger = tmp_path / "claims.jsonl"
    for _ in range(3):
        found = converged(disputed, ledger, sources=sources, archive=None, stable_rounds=1)
    assert not found.passed
    assert found.problems == ("the sources of key claim C1 disagree",)
    [contradiction] = found.contradictions
    assert contradiction.describe() == (
        f'C1: {sources / "log.md"} ({sources / "log.md"}) says "first lit on 1 November 1851" '
        f'but {sources / "survey.md"} ({sources / "survey.md"}) says "first lit in 1852" '
        "(1851 against 1852)"
    )
    assert "Contradictions between sources:\n- C1: " in found.report()


def test_a_disputed_claim_that_is_not_key_is_listed_but_passes(
    tmp_path: Path, sources: Path
) -> None:
    text = (
        AGREED
        + '- C3: The date is disputed [log] "lit on 1 November 1851" [survey] "first lit in 1852"\n'
    )
    ledger = tmp_path / "claims.jsonl"
    for _ in range(2):
        found = converged(text, ledger, sources=sources, archive=None, stable_rounds=1)
    assert found.passed
    assert [c.claim for c in found.contradictions] == ["C3"]


def test_numbers_in_common_are_agreement(tmp_path: Path, sources: Path) -> None:
    text = '- C1 (key): x [log] "1 November 1851" [gazette] "lit in 1851, was rebuilt in 1880"\n'
    ledger = tmp_path / "claims.jsonl"
    for _ in range(2):
        found = converged(text, ledger, sources=sources, archive=None, stable_rounds=1)
    assert (found.passed, found.contradictions) == (True, ())


RIDES = {
    "transit-board.md": "The network opened in 2019. In its first year it recorded 120,000 rides "
    "across 40 stations, with 85 bikes per station and a fare of $2.50.",
    "city-paper.md": "Since 2019, riders have kept coming: the scheme recorded 130,000 rides "
    "across 40 stations in its first year, with a fare of $2.50 and 85 bikes per station.",
    "annual-report.md": "Ridership: the scheme recorded 120000 rides across 40 stations; "
    "by 2021 it had grown to 60 stations and 3,400 bikes.",
    "blog.md": "Our survey counted 120k rides in the first year and 1,200 members.",
}


@pytest.fixture
def pages(tmp_path: Path) -> Path:
    """Pages with several figures each, on one bike-share scheme."""
    folder = tmp_path / "pages"
    folder.mkdir()
    for name, text in RIDES.items():
        (folder / name).write_text(text)
    return folder


def check(text: str, tmp_path: Path, pages: Path) -> Convergence:
    ledger = tmp_path / "claims.jsonl"
    for _ in range(2):
        found = converged(text, ledger, sources=pages, archive=None, stable_rounds=1)
    return found


def test_one_figure_that_differs_is_a_contradiction_though_others_agree(
    tmp_path: Path, pages: Path
) -> None:
    text = (
        '- C1 (key): 120,000 rides in the first year [transit-board] "it recorded 120,000 rides '
        'across 40 stations, with 85 bikes per station and a fare of $2.50" [city-paper] "the '
        "scheme recorded 130,000 rides across 40 stations in its first year, with a fare of $2.50 "
        'and 85 bikes per station"\n'
    )
    found = check(text, tmp_path, pages)
    assert not found.passed
    assert found.problems == ("the sources of key claim C1 disagree",)
    [contradiction] = found.contradictions
    assert [d.describe() for d in contradiction.differences] == [
        "120,000 rides against 130,000 rides"
    ]
    assert contradiction.describe().endswith("(120,000 rides against 130,000 rides)")
    assert "40 stations against" not in found.report()
    assert "\n- C1: " in found.report()
    assert "120,000 rides against 130,000 rides" in found.report()


def test_the_two_sentences_alone_disagree_on_rides_only(tmp_path: Path, pages: Path) -> None:
    text = (
        '- C1 (key): x [transit-board] "recorded 120,000 rides across 40 stations" '
        '[city-paper] "recorded 130,000 rides across 40 stations"\n'
    )
    [contradiction] = check(text, tmp_path, pages).contradictions
    assert contradiction.describe().endswith(
        '"recorded 130,000 rides across 40 stations" (120,000 rides against 130,000 rides)'
    )


def test_one_number_spelled_two_ways_or_different_quantities_agree(
    tmp_path: Path, pages: Path
) -> None:
    text = (
        '- C1 (key): 120,000 rides [transit-board] "recorded 120,000 rides across 40 stations" '
        '[annual-report] "recorded 120000 rides across 40 stations" [blog] "counted 120k rides in '
        'the first year"\n'
        '- C2 (key): growth [annual-report] "by 2021 it had grown to 60 stations and 3,400 bikes" '
        '[blog] "counted 120k rides in the first year and 1,200 members"\n'
    )
    found = check(text, tmp_path, pages)
    assert (found.passed, found.contradictions) == (True, ())


def test_every_quantity_that_differs_is_named(tmp_path: Path, pages: Path) -> None:
    text = (
        '- C1 (key): x [annual-report] "by 2021 it had grown to 60 stations and 3,400 bikes" '
        '[transit-board] "it recorded 120,000 rides across 40 stations, with 85 bikes per '
        'station"\n'
    )
    [contradiction] = check(text, tmp_path, pages).contradictions
    assert [d.describe() for d in contradiction.differences] == [
        "60 stations against 40 stations",
        "3,400 bikes against 85 bikes",
    ]


def test_findings_without_claims_do_not_converge(tmp_path: Path, sources: Path) -> None:
    ledger = tmp_path / "claims.jsonl"
    for _ in range(2):
        found = converged("# Nothing\n", ledger, sources=sources, archive=None, stable_rounds=1)
    assert found.problems == (
        'no claims found; state each as "- C1 (key): ..." with its citations',
    )


def test_a_ledger_is_carried_up_to_a_time_as_it_was_recorded(tmp_path: Path) -> None:
    earlier, ledger = tmp_path / "a" / "claims.jsonl", tmp_path / "b" / "claims.jsonl"
    kept = record_claims(earlier, parse_claims(FINDINGS))
    later = record_claims(earlier, parse_claims(FINDINGS.replace("1907", "1908")))[-1]
    cut = datetime.fromisoformat(later.at)
    assert datetime.fromisoformat(kept[0].at) < cut  # to the µs: entries made at once differ
    assert carry_ledger(earlier, ledger, before=cut, root=tmp_path) == kept
    assert read_ledger(ledger) == kept
    assert carry_ledger(earlier, tmp_path / "c.jsonl", before=None, root=tmp_path)[-1] == later
    assert (
        carry_ledger(tmp_path / "none.jsonl", tmp_path / "d.jsonl", before=None, root=tmp_path)
        == []
    )
    assert not (tmp_path / "d.jsonl").exists()


def test_a_ledger_line_cut_short_by_a_crash_is_left_out(tmp_path: Path) -> None:
    ledger = tmp_path / "claims.jsonl"
    record_claims(ledger, parse_claims(FINDINGS))
    whole = ledger.read_text()
    ledger.write_text(whole + whole[: len(whole) // 2])  # the last write, torn
    assert len(read_ledger(ledger)) == 1
    ledger.write_text(whole[: len(whole) // 2] + "\n" + whole)  # a bad line that is not the last
    with pytest.raises(ConfigError, match=r"claims.jsonl: line 1 is not a ledger entry"):
        read_ledger(ledger)


def test_recording_after_a_torn_line_drops_it_and_keeps_the_ledger_readable(
    tmp_path: Path,
) -> None:
    ledger = tmp_path / "claims.jsonl"
    record_claims(ledger, parse_claims(FINDINGS))
    whole = ledger.read_text()
    ledger.write_text(whole + whole[: len(whole) // 2])  # the last write, torn
    entries = record_claims(ledger, parse_claims(FINDINGS))
    assert len(entries) == 2
    assert read_ledger(ledger) == entries  # the torn line is gone, not glued to the new entry
    assert ledger.read_text().endswith("\n")
    assert ledger.read_text().count("\n") == 2


def test_an_entry_without_its_time_zone_is_not_carried(tmp_path: Path) -> None:
    earlier = tmp_path / "claims.jsonl"
    record_claims(earlier, parse_claims(FINDINGS))
    entry = read_ledger(earlier)[0]
    earlier.write_text(
        entry.model_copy(update={"at": "2026-12-01T10:00:00"}).model_dump_json() + "\n"
    )
    with pytest.raises(
        ConfigError, match=r"'2026-12-01T10:00:00' is not an ISO 8601 time with its zone"
    ):
        carry_ledger(earlier, tmp_path / "new.jsonl", before=datetime.now(UTC), root=tmp_path)


def test_a_ledger_behind_a_link_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.jsonl"
    record_claims(elsewhere, parse_claims(FINDINGS))
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "claims.jsonl").symlink_to(elsewhere)
    with pytest.raises(UnsafePath, match="follows no link"):
        carry_ledger(
            tmp_path / "run" / "claims.jsonl", tmp_path / "new.jsonl", before=None, root=tmp_path
        )
    with pytest.raises(UnsafePath, match="follows no link"):
        record_claims(tmp_path / "run" / "claims.jsonl", {})
    assert len(read_ledger(elsewhere)) == 1  # nothing written through the link
