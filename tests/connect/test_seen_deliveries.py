"""The webhook's memory of deliveries taken: exactly the newest ``bound`` of them, in memory and
in its file, each written to disk before it counts as taken."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from harness.connect.deliveries import MAX_REMEMBERED, SeenDeliveries


def _take(seen: SeenDeliveries, numbers: range) -> None:
    for n in numbers:
        assert seen.take(f"d{n}", f"body {n}".encode()) is True


def test_exactly_the_newest_bound_deliveries_are_remembered_by_id_and_by_body(
    tmp_path: Path,
) -> None:
    path = tmp_path / "deliveries"
    seen = SeenDeliveries(path, bound=3)
    _take(seen, range(4))  # d0 is now one too old
    for remembered in (seen, SeenDeliveries(path, bound=3)):  # and after a restart
        for n in (1, 2, 3):  # the third-newest's id too, not only the newer ones
            assert remembered.take(f"d{n}", b"another body") is False
            assert remembered.take("another id", f"body {n}".encode()) is False
    assert seen.take("d0", b"body 0") is True  # let go in memory, not only in the file
    assert SeenDeliveries(path, bound=3).take("d0", b"body 0") is False  # and taken again now


def test_a_refused_delivery_is_not_remembered(tmp_path: Path) -> None:
    seen = SeenDeliveries(tmp_path / "deliveries", bound=3)
    _take(seen, range(1))
    assert seen.take("d0", b"a new body") is False
    assert seen.take("a new id", b"body 0") is False
    assert (tmp_path / "deliveries").read_text() == f"id:d0\nbody:{_digest(b'body 0')}\n"
    assert seen.take("a new id", b"a new body") is True  # neither key was kept by the refusals


def test_a_delivery_without_an_id_is_known_by_its_body_alone(tmp_path: Path) -> None:
    path = tmp_path / "deliveries"
    seen = SeenDeliveries(path, bound=3)
    assert seen.take(None, b"payload") is True
    assert seen.take(None, b"payload") is False
    assert seen.take("", b"payload") is False
    assert path.read_text() == f"body:{_digest(b'payload')}\n"


def test_the_file_is_appended_to_and_rewritten_to_the_bound_when_it_holds_twice_as_many(
    tmp_path: Path,
) -> None:
    path = tmp_path / "deliveries"
    seen = SeenDeliveries(path, bound=3)
    lines = []
    for n in range(11):
        _take(seen, range(n, n + 1))
        lines.append(len(path.read_text().splitlines()))
    # two lines a delivery; past twelve (twice three deliveries' two) rewritten to the newest six
    assert lines == [2, 4, 6, 8, 10, 12, 6, 8, 10, 12, 6]
    assert path.read_text().splitlines()[:2] == ["id:d8", f"body:{_digest(b'body 8')}"]


def test_a_restart_reads_only_the_newest_bound_deliveries_of_a_longer_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "deliveries"
    _take(SeenDeliveries(path, bound=6), range(6))  # twelve lines
    reread = SeenDeliveries(path, bound=3)
    assert reread.take("d3", b"x") is False  # d3, d4, d5 are the newest three
    assert reread.take("y", b"body 3") is False
    assert reread.take("d2", b"z") is True  # d0 to d2 are past the bound


def test_the_default_bound_is_ten_thousand_deliveries(tmp_path: Path) -> None:
    path = tmp_path / "deliveries"
    path.write_text("".join(f"id:d{n}\nbody:b{n}\n" for n in range(MAX_REMEMBERED + 1)))
    seen = SeenDeliveries(path)
    assert MAX_REMEMBERED == 10_000
    assert seen.take("d1", b"x") is False  # the oldest of the newest ten thousand
    assert seen.take("d0", b"y") is True  # one more than the bound


def test_a_taken_delivery_is_fsynced_to_its_file_before_it_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "deliveries"
    seen = SeenDeliveries(path, bound=3)
    synced: list[str] = []
    real = os.fsync

    def watched(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fsync", watched)
    assert seen.take("d0", b"body 0") is True
    assert synced == [str(path)]  # taken means remembered, after a power cut too
    assert seen.take("d0", b"body 0") is False
    assert synced == [str(path)]  # a refusal writes nothing


def _digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()
