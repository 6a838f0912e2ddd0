"""Snapshots outside git: what a round's copy takes, and a restore that gives its files exactly."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.core.errors import BookkeepingError
from harness.workspace.snapshots import Snapshots


def files(folder: Path, found: dict[str, str]) -> None:
    for rel, text in found.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)


def test_a_snapshot_leaves_out_git_caches_links_and_the_excluded(tmp_path: Path) -> None:
    work = tmp_path / "work"
    files(work, {"a.md": "a", "sub/b.md": "b", ".git/HEAD": "x", "__pycache__/m.pyc": "x",
                 ".harness/runs/r/events.jsonl": "x", "progress/l.md": "x", "sub/c.pyc": "x"})  # fmt: skip
    (tmp_path / "secret").write_text("outside")
    os.symlink(tmp_path / "secret", work / "link.md")
    os.symlink(tmp_path, work / "linked")
    kept = Snapshots(tmp_path / "kept", work, (".harness/runs/", "progress/l.md"))
    assert sorted(kept.files()) == ["a.md", "sub/b.md"]
    assert kept.take(1, {"round": 1})
    assert kept.kept(1) == {"a.md": b"a", "sub/b.md": b"b"}
    assert kept.record(1) == {"round": 1}


def test_a_restore_gives_the_rounds_files_exactly_and_keeps_what_it_replaced(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    files(work, {"a.md": "first\n"})
    kept = Snapshots(tmp_path / "kept", work)
    kept.take(1, {})
    files(work, {"a.md": "second\n", "new/b.md": "later\n"})
    kept.take(2, {})
    assert kept.diff(1, 2) == (
        "--- round 1/a.md\n+++ round 2/a.md\n@@ -1 +1 @@\n-first\n+second\n"
        "--- round 1/new/b.md\n+++ round 2/new/b.md\n@@ -0,0 +1 @@\n+later\n"
    )
    kept.restore(1)
    assert {rel: p.read_bytes() for rel, p in kept.files().items()} == {"a.md": b"first\n"}
    before = tmp_path / "kept" / "before-restore" / "files"
    assert (before / "new/b.md").read_text() == "later\n"
    with pytest.raises(BookkeepingError, match="round 3 was not kept"):
        kept.restore(3)


def test_a_restore_writes_through_no_link(tmp_path: Path) -> None:
    work = tmp_path / "work"
    files(work, {"sub/a.md": "a"})
    kept = Snapshots(tmp_path / "kept", work)
    kept.take(1, {})
    (work / "sub/a.md").unlink()
    (work / "sub").rmdir()
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", work / "sub")
    with pytest.raises(BookkeepingError, match="is a symlink"):
        kept.restore(1)
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_a_workspace_over_the_limit_is_recorded_not_kept_and_cannot_be_restored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    files(work, {"a.md": "12345", "b.md": "678"})
    kept = Snapshots(tmp_path / "kept", work)
    monkeypatch.setattr("harness.workspace.snapshots.MAX_BYTES", 8)  # exactly the two files
    assert kept.take(1, {"round": 1})
    files(work, {"b.md": "6789"})
    assert not kept.take(2, {"round": 2})
    assert kept.record(2) == {"round": 2, "not_kept": "the workspace holds 9 bytes, over 8"}
    with pytest.raises(BookkeepingError, match="round 2 was not kept .*: the workspace holds 9"):
        kept.restore(2)
    assert (work / "b.md").read_text() == "6789"  # a refused restore touches nothing
    assert not (tmp_path / "kept" / "before-restore").exists()


def test_a_diff_between_rounds_names_a_binary_file_without_showing_it(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "logo.png").write_bytes(b"\x89PNG\x00\xff")
    kept = Snapshots(tmp_path / "kept", work)
    kept.take(1, {})
    (work / "logo.png").write_bytes(b"\x89PNG\x00\xfe")
    kept.take(2, {})
    assert kept.diff(1, 2) == "binary file logo.png differs\n"
    assert kept.diff(2, 2) == ""


@pytest.mark.parametrize("text", ["{not json", "[1]", "\xff"])
def test_an_unreadable_round_record_is_named_and_nothing_is_restored(
    tmp_path: Path, text: str
) -> None:
    work = tmp_path / "work"
    files(work, {"a.md": "first\n"})
    kept = Snapshots(tmp_path / "kept", work)
    kept.take(1, {"round": 1})
    (tmp_path / "kept" / "1" / "round.json").write_bytes(text.encode("latin-1"))
    files(work, {"a.md": "second\n"})
    with pytest.raises(BookkeepingError, match=r"kept/1/round.json: the round's record"):
        kept.restore(1)
    assert (work / "a.md").read_text() == "second\n"
