"""The harness's own files: no link followed, regular files only, reads bounded."""

from __future__ import annotations

import errno
import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.core import nofollow
from harness.core.atomic import atomic_write_text
from harness.core.nofollow import UnsafePath, trusted_root
from harness.core.stop import StopReason
from harness.memory.inbox import Inbox
from harness.memory.lock import LoopLock
from harness.memory.spend import Spent, read_spent, write_spent


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


def test_one_other_name_is_enough_to_refuse_a_write(tmp_path: Path, victim: Path) -> None:
    log = tmp_path / "events.jsonl"
    os.link(victim, log)  # two names in all
    assert victim.stat().st_nlink == 2

    with pytest.raises(UnsafePath, match="has another name"):
        nofollow.append(log, b"line\n")
    with pytest.raises(UnsafePath, match="has another name"):
        nofollow.open_file(log, os.O_RDWR)

    assert victim.read_text() == "# mine\n"
    assert nofollow.read_bytes(log) == b"# mine\n"


def test_nothing_is_made_on_the_way_to_a_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "run" / "deeper" / "events.jsonl"
    with trusted_root(tmp_path):
        with pytest.raises(FileNotFoundError):
            nofollow.read_bytes(missing)
        with pytest.raises(FileNotFoundError):
            nofollow.open_folder(missing.parent)
        nofollow.unlink(missing)
        assert nofollow.rename(missing, "events.old") is False
    assert list(tmp_path.iterdir()) == []


def open_descriptors() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_no_descriptor_is_left_open_done_or_refused(tmp_path: Path, victim: Path) -> None:
    deep = tmp_path / "a" / "b" / "c"
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "link").symlink_to(victim.parent)
    before = open_descriptors()
    with trusted_root(tmp_path):
        assert nofollow.write_atomic(deep / "p.md", b"one") == deep / "p.md"
        nofollow.write_atomic(deep / "p.md", b"two", durable=False)
        made = nofollow.append(deep / "log", b"one\n")
        nofollow.append(deep / "log", b"two\n", expect=made, durable=True)
        assert nofollow.read_bytes(deep / "p.md") == b"two"
        folder = nofollow.open_folder(deep)
        assert os.fstat(folder).st_ino == deep.stat().st_ino
        os.close(folder)
        assert nofollow.rename(deep / "p.md", "p.old") is True
        nofollow.unlink(deep / "p.old")
        os.link(victim, deep / "second")
        (deep / "to-victim").symlink_to(victim)
        refused = [
            lambda: nofollow.read_bytes(deep / "log", limit=3),  # too big
            lambda: nofollow.append(deep / "second", b"x"),  # a hard link
            lambda: nofollow.read_bytes(deep / "to-victim"),  # a link as the file
            lambda: nofollow.write_atomic(deep / "to-victim", b"x"),
            lambda: nofollow.rename(deep / "to-victim", "moved"),
            lambda: nofollow.read_bytes(tmp_path / "a" / "link" / "b" / "f"),  # a link on the way
            lambda: nofollow.unlink(tmp_path / "a" / "link" / ".bashrc"),
        ]
        for call in refused:
            with pytest.raises(UnsafePath):
                call()
        with pytest.raises(FileNotFoundError):
            nofollow.read_bytes(deep / "missing")
    assert open_descriptors() - before == set()
    assert sorted(p.name for p in deep.iterdir()) == ["log", "second", "to-victim"]
    assert victim.read_text() == "# mine\n"


def test_a_failed_replacement_leaves_the_old_file_and_no_temporary_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "state" / "p.md"
    nofollow.write_atomic(target, b"old")
    before = open_descriptors()

    real = os.fsync

    def full_disk(fd: int) -> None:  # the file's data does not fit; its folder syncs
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd)

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space left"):
        nofollow.write_atomic(target, b"new")
    assert open_descriptors() - before == set()
    assert [p.name for p in target.parent.iterdir()] == ["p.md"]
    assert target.read_bytes() == b"old"


@pytest.mark.parametrize("where", ["file", "folder"])
def test_a_name_too_long_is_the_systems_error_not_a_refusal(tmp_path: Path, where: str) -> None:
    long = "x" * 300
    path = tmp_path / long if where == "file" else tmp_path / long / "p.md"
    with trusted_root(tmp_path):
        for call in (lambda: nofollow.read_bytes(path), lambda: nofollow.append(path, b"x")):
            with pytest.raises(OSError, match="File name too long") as raised:
                call()
            assert raised.type is OSError
            assert raised.value.errno == errno.ENAMETOOLONG


def test_read_up_to_reads_that_many_bytes_and_fewer_only_at_the_end(tmp_path: Path) -> None:
    data = bytes(range(256)) * (5 << 12)  # 5 MB: several reads of 1 MB
    (tmp_path / "f").write_bytes(data)
    fd = os.open(tmp_path / "f", os.O_RDONLY)
    try:
        assert nofollow.read_up_to(fd, 10) == data[:10]
        assert nofollow.read_up_to(fd, (3 << 20) + 1) == data[10 : (3 << 20) + 11]
        assert nofollow.read_up_to(fd, 0) == b""
        assert nofollow.read_up_to(fd, len(data)) == data[(3 << 20) + 11 :]
        assert nofollow.read_up_to(fd, 10) == b""
    finally:
        os.close(fd)


def test_a_file_of_exactly_the_limit_is_read_and_one_byte_more_is_refused(
    tmp_path: Path,
) -> None:
    (tmp_path / "ten").write_bytes(b"0123456789")
    assert nofollow.read_bytes(tmp_path / "ten", limit=10) == b"0123456789"
    with pytest.raises(UnsafePath, match="larger than 9 bytes"):
        nofollow.read_bytes(tmp_path / "ten", limit=9)
    # a file whose size says nothing (procfs says 0) is bounded by what is read
    with pytest.raises(UnsafePath, match="larger than 10 bytes"):
        nofollow.read_bytes("/proc/self/status", limit=10)
    sparse = tmp_path / "sparse"
    with sparse.open("wb") as file:
        file.truncate(nofollow.READ_LIMIT)
    assert nofollow.read_bytes(sparse) == bytes(64 << 20)
    with sparse.open("ab") as file:
        file.write(b"x")
    with pytest.raises(UnsafePath, match="larger than 67108864 bytes"):
        nofollow.read_bytes(sparse)


@pytest.fixture
def umask() -> Iterator[None]:
    old = os.umask(0o022)
    yield
    os.umask(old)


@pytest.mark.usefixtures("umask")
def test_made_files_and_folders_have_the_usual_modes_and_a_replaced_file_keeps_its_own(
    tmp_path: Path,
) -> None:
    def mode(path: Path) -> int:
        return path.stat().st_mode & 0o777

    with trusted_root(tmp_path):
        nofollow.append(tmp_path / "run" / "log" / "events.jsonl", b"one\n")
        nofollow.write_atomic(tmp_path / "state" / "p.md", b"one")
        os.close(nofollow.open_file(tmp_path / "lock", os.O_WRONLY | os.O_CREAT))
    nofollow.write_atomic(tmp_path / "no" / "root" / "p.md", b"one")  # its folders made too
    assert [mode(tmp_path / p) for p in ("run", "run/log", "state", "no", "no/root")] == [0o755] * 5
    made = ("run/log/events.jsonl", "state/p.md", "lock", "no/root/p.md")
    assert [mode(tmp_path / p) for p in made] == [0o644] * 4
    private = tmp_path / "state" / "p.md"
    private.chmod(0o600)
    nofollow.write_atomic(private, b"two")
    assert (mode(private), private.read_bytes()) == (0o600, b"two")


def test_write_atomic_fsyncs_the_file_and_its_folder_only_when_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[bool] = []
    real = os.fsync
    monkeypatch.setattr(
        os, "fsync", lambda fd: (synced.append(stat.S_ISDIR(os.fstat(fd).st_mode)), real(fd))
    )
    nofollow.write_atomic(tmp_path / "p.md", b"one", durable=False)
    assert synced == []
    nofollow.write_atomic(tmp_path / "p.md", b"two")
    assert synced == [False, True]  # the file, then its folder
    assert (tmp_path / "p.md").read_bytes() == b"two"


def test_unlink_removes_a_link_itself_and_never_reaches_through_one(
    tmp_path: Path, victim: Path
) -> None:
    (tmp_path / "events.jsonl").symlink_to(victim)
    nofollow.unlink(tmp_path / "events.jsonl")
    assert not (tmp_path / "events.jsonl").is_symlink()
    (tmp_path / "state").symlink_to(victim.parent)
    with trusted_root(tmp_path), pytest.raises(UnsafePath, match="'state' on its path"):
        nofollow.unlink(tmp_path / "state" / ".bashrc")
    nofollow.unlink(tmp_path / "gone")  # nothing there: nothing done
    assert victim.read_text() == "# mine\n"


def test_rename_moves_a_file_in_its_folder_and_refuses_a_link(tmp_path: Path, victim: Path) -> None:
    (tmp_path / "p.md").write_text("progress")
    assert nofollow.rename(tmp_path / "p.md", "p.old.md") is True
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outside", "p.old.md"]
    assert (tmp_path / "p.old.md").read_text() == "progress"
    assert nofollow.rename(tmp_path / "p.md", "p.older.md") is False
    (tmp_path / "p.md").symlink_to(victim)
    with pytest.raises(UnsafePath, match="a symlink, not a regular file"):
        nofollow.rename(tmp_path / "p.md", "p.old.md")
    assert (tmp_path / "p.md").is_symlink()
    assert (tmp_path / "p.old.md").read_text() == "progress"


def test_a_refusal_names_the_path_and_stops_the_run_with_an_error(
    tmp_path: Path, victim: Path
) -> None:
    link = tmp_path / "events.jsonl"
    link.symlink_to(victim)
    with pytest.raises(UnsafePath) as raised:
        nofollow.read_bytes(link)
    assert (raised.value.path, raised.value.reason) == (link, StopReason.ERROR)
    assert str(raised.value) == (
        f"{link}: 'events.jsonl' on its path is a symlink or not a folder; the harness follows "
        "no link it did not make and stops here"
    )


def test_a_trusted_root_holds_only_its_own_paths_and_only_while_inside(
    tmp_path: Path, victim: Path
) -> None:
    root = tmp_path / "workspace"
    (root / "progress").mkdir(parents=True)
    (root / "linked").symlink_to(victim.parent)
    elsewhere = tmp_path / "elsewhere" / "p.md"
    with trusted_root(root):
        nofollow.write_atomic(elsewhere, b"not below the root")
        with pytest.raises(UnsafePath, match="'linked' on its path"):
            nofollow.write_atomic(root / "linked" / "p.md", b"refused")
        with pytest.raises(UnsafePath, match="a folder, not a regular file"):
            nofollow.read_bytes(root)  # the root itself: a file in its parent
    nofollow.write_atomic(root / "linked" / "p.md", b"the root is gone: the caller's folder")
    assert elsewhere.read_bytes() == b"not below the root"
    assert (victim.parent / "p.md").read_bytes() == b"the root is gone: the caller's folder"


def test_descend_makes_folders_only_when_asked_and_says_why_a_step_failed(
    tmp_path: Path, victim: Path
) -> None:
    with pytest.raises(FileNotFoundError):
        nofollow.descend(tmp_path, ["a", "b"])
    assert list(tmp_path.iterdir()) == [victim.parent]
    fd = nofollow.descend(tmp_path, ["a", "b"], make=True)
    try:
        assert os.fstat(fd).st_ino == (tmp_path / "a" / "b").stat().st_ino
    finally:
        os.close(fd)
    (tmp_path / "a" / "link").symlink_to(victim.parent)
    with pytest.raises(OSError, match="Not a directory") as raised:  # a link, not a folder
        nofollow.descend(tmp_path, ["a", "link"])
    assert raised.value.errno == errno.ENOTDIR
    assert not isinstance(raised.value, UnsafePath)


def test_what_stands_where_a_file_goes_is_named_when_refused(tmp_path: Path) -> None:
    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "pipe")
    listening = socket.socket(socket.AF_UNIX)
    listening.bind(str(tmp_path / "socket"))
    try:
        for name, kind in [("folder", "a folder"), ("pipe", "a named pipe"),
                           ("socket", "a socket")]:  # fmt: skip
            with pytest.raises(UnsafePath, match=f"{kind}, not a regular file"):
                nofollow.write_atomic(tmp_path / name, b"x")
    finally:
        listening.close()
    with pytest.raises(UnsafePath, match="a device, not a regular file"):
        nofollow.write_atomic("/dev/null", b"x")
    with pytest.raises(UnsafePath, match="a device, not a regular file"):
        nofollow.read_bytes("/dev/zero")
