"""A run's record appended at every step: to the file its first line made, and nowhere else."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest

from harness.core import nofollow
from harness.core.appender import Appender
from harness.core.nofollow import UnsafePath


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


def open_descriptors() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_an_appender_let_go_closes_its_file(tmp_path: Path) -> None:
    before = open_descriptors()
    appender = Appender(tmp_path / "run" / "events.jsonl", root=tmp_path)
    appender.write(b"one\n")
    assert len(open_descriptors() - before) == 1  # kept open between writes
    del appender
    gc.collect()
    assert open_descriptors() - before == set()


def test_a_path_too_long_for_one_call_is_written_once_a_line(tmp_path: Path) -> None:
    """Past the system's 4,096 characters a path cannot be looked at in one call (``lstat``
    fails), but it can be walked one folder at a time: every line is then walked to, and
    written once."""
    deep = tmp_path.joinpath(*["d" * 250] * 20, "events.jsonl")
    assert len(str(deep)) > 4096
    appender = Appender(deep, root=tmp_path)
    for line in (b"one\n", b"two\n", b"three\n"):
        appender.write(line)
    assert not appender.closed
    assert nofollow.read_bytes(deep, root=tmp_path) == b"one\ntwo\nthree\n"
