"""The harness's own files: no link followed, regular files only, reads bounded."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.core import nofollow
from harness.core.appender import Appender
from harness.core.atomic import atomic_write_text
from harness.core.nofollow import UnsafePath, trusted_root
from harness.memory.inbox import Inbox
from harness.memory.lock import LoopLock
from harness.memory.spend import Spent, read_spent, write_spent


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    target = tmp_path / "outside" / ".bashrc"
    target.parent.mkdir()
    target.write_text("# mine\n")
    return target


def test_a_link_as_the_file_is_refused_for_every_kind_of_access(
    tmp_path: Path, victim: Path
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    for name in ("p.md", "p.spend.json", "p.md.lock"):
        (state / name).symlink_to(victim)
    inbox = Inbox(state / "p.md")  # in the user's state folder, where a link is refused too
    for path in (inbox.notes_file, inbox.answer_file):
        path.symlink_to(victim)

    with pytest.raises(UnsafePath, match="p.md"):
        atomic_write_text(state / "p.md", "new")
    with pytest.raises(UnsafePath, match="spend.json"):
        read_spent(state / "p.spend.json")
    with pytest.raises(UnsafePath, match="spend.json"):
        write_spent(state / "p.spend.json", Spent())
    with pytest.raises(UnsafePath, match=r"p\.md\.lock"):
        LoopLock(state / "p.md").acquire()
    with pytest.raises(UnsafePath, match="notes"):
        Inbox(state / "p.md").add_note("a note")
    with pytest.raises(UnsafePath, match="approval"):
        Inbox(state / "p.md").answer_for(1)

    assert victim.read_text() == "# mine\n"


def test_no_folder_link_is_followed_below_a_trusted_root(tmp_path: Path, victim: Path) -> None:
    root = tmp_path / "workspace"
    root.mkdir()
    (root / "progress").symlink_to(victim.parent)

    atomic_write_text(root / "progress" / "p.md", "outside root: the folder is the caller's")
    with trusted_root(root), pytest.raises(UnsafePath, match="'progress' on its path is a symlink"):
        atomic_write_text(root / "progress" / "p.md", "refused")

    assert sorted(p.name for p in victim.parent.iterdir()) == [".bashrc", "p.md"]


def test_a_named_pipe_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    pipe = tmp_path / "events.jsonl"
    os.mkfifo(pipe)

    with pytest.raises(UnsafePath, match="named pipe"):
        nofollow.read_text(pipe)
    with pytest.raises(UnsafePath, match="named pipe"):
        nofollow.append(pipe, b"line\n")


def test_reads_are_bounded(tmp_path: Path) -> None:
    big = tmp_path / "p.spend.json"
    big.write_bytes(b" " * (128 * 1024))

    with pytest.raises(UnsafePath, match="larger than 65536 bytes"):
        read_spent(big)


def test_an_append_finds_the_file_it_made_or_refuses(tmp_path: Path) -> None:
    log = tmp_path / "run" / "events.jsonl"
    made = nofollow.append(log, b"one\n")
    assert nofollow.append(log, b"two\n", expect=made) == made

    (tmp_path / "run").rename(tmp_path / "moved")
    (tmp_path / "run").mkdir()
    log.write_text("planted\n")
    with pytest.raises(UnsafePath, match="not the file the harness made"):
        nofollow.append(log, b"three\n", expect=made)
    log.unlink()
    with pytest.raises(UnsafePath, match="gone since the harness made it"):
        nofollow.append(log, b"three\n", expect=made)

    assert (tmp_path / "moved" / "events.jsonl").read_text() == "one\ntwo\n"


def test_an_appender_walks_to_its_file_once_and_writes_nowhere_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's record is appended at every step: the path is walked for the first line only,
    later lines go to the file it made while a look at its path finds it there."""
    opened: list[object] = []
    open_file = nofollow.open_file

    def counting(path: object, *args: object, **kwargs: object) -> int:
        opened.append(path)
        return open_file(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(nofollow, "open_file", counting)
    log = tmp_path / "run" / "events.jsonl"
    appender = Appender(log, root=tmp_path)
    for n in range(100):
        appender.write(f"{n}\n".encode())
    assert opened == [log]
    assert log.read_text() == "".join(f"{n}\n" for n in range(100))


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ("moved", "not the file the harness made"),
        ("removed", "gone since the harness made it"),
        ("link", "a symlink"),
        ("hard link", "has another name"),
    ],
)
def test_an_appender_refuses_a_file_moved_replaced_or_linked(
    tmp_path: Path, victim: Path, change: str, problem: str
) -> None:
    log = tmp_path / "run" / "events.jsonl"
    appender = Appender(log, root=tmp_path)
    appender.write(b"one\n")
    if change == "moved":  # the folder renamed, another put in its place
        (tmp_path / "run").rename(tmp_path / "moved")
        (tmp_path / "run").mkdir()
        log.write_text("planted\n")
    elif change == "removed":
        log.unlink()
    elif change == "link":
        log.rename(tmp_path / "moved.jsonl")
        log.symlink_to(victim)
    else:
        os.link(log, tmp_path / "second-name")
    with pytest.raises(UnsafePath, match=problem):
        appender.write(b"two\n")
    appender.write(b"three\n")  # closed: nothing more is written anywhere
    assert appender.closed
    assert victim.read_text() == "# mine\n"
    written = [p.read_text() for p in tmp_path.rglob("*") if p.is_file() and not p.is_symlink()]
    assert "two" not in "".join(written)
    assert "three" not in "".join(written)


def test_a_hard_link_is_never_written_in_place(tmp_path: Path, victim: Path) -> None:
    """Before: an agent's ``ln ~/.bashrc events.jsonl`` made the harness append its events to
    the user's file, and a hard-linked lock emptied it."""
    state = tmp_path / "state"
    state.mkdir()
    for name in ("p.events.jsonl", "p.md.lock"):
        os.link(victim, state / name)

    with pytest.raises(UnsafePath, match="hard link"):
        nofollow.append(state / "p.events.jsonl", b"$(touch PWNED)\n")
    with pytest.raises(UnsafePath, match="hard link"):
        LoopLock(state / "p.md").acquire()

    assert victim.read_text() == "# mine\n"
    assert nofollow.read_bytes(state / "p.md.lock") == b"# mine\n"  # reading one is harmless


def test_append_fsyncs_only_when_durable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd)))
    log = tmp_path / "log"
    nofollow.append(log, b"one\n")
    assert synced == []
    nofollow.append(log, b"two\n", durable=True)
    assert len(synced) == 1
    assert log.read_bytes() == b"one\ntwo\n"
