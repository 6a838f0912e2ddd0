"""LoopLock: one driver per loop, across real processes; released when the holder dies."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from harness.core.errors import HarnessError
from harness.memory.lock import LockHeld, LoopLock

ROOT = Path(__file__).resolve().parents[2]

HOLD = """
import sys, time
from harness.memory.lock import LoopLock
LoopLock(sys.argv[1]).acquire()
print("held", flush=True)
time.sleep(60)
"""

TRY = """
import sys
from harness.memory.lock import LockHeld, LoopLock
try:
    with LoopLock(sys.argv[1]):
        print("acquired")
except LockHeld as exc:
    print(exc)
    sys.exit(3)
"""


def _try(progress: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", TRY, str(progress)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_second_process_is_refused_with_the_holders_name_until_the_holder_dies(
    tmp_path: Path,
) -> None:
    progress = tmp_path / "goal.md"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(progress)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "held\n"

        refused = _try(progress)
        with pytest.raises(LockHeld) as caught:
            LoopLock(progress).acquire()
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout:
            holder.stdout.close()

    who = f"pid {holder.pid} on {socket.gethostname()}, started "
    assert refused.returncode == 3
    assert who in refused.stdout
    assert f"{tmp_path / 'goal.md.lock'} is held by {who}" in str(caught.value)
    assert caught.value.holder["pid"] == holder.pid
    assert isinstance(caught.value, HarnessError)
    with LoopLock(progress) as lock:  # the kernel let go when the holder died
        assert lock.held


def test_holder_details_are_written_and_cleared_on_release(tmp_path: Path) -> None:
    lock = LoopLock(tmp_path / "goal.md")

    with lock:
        details = json.loads(lock.path.read_text(encoding="utf-8"))
        assert lock.acquire() is lock  # already held: no second lock
        refused = _try(tmp_path / "goal.md")

    assert refused.returncode == 3
    assert set(details) == {"pid", "host", "started"}
    assert details["host"] == socket.gethostname()
    assert not lock.held
    assert lock.path.read_text(encoding="utf-8") == ""
    assert _try(tmp_path / "goal.md").stdout == "acquired\n"


def test_two_locks_in_one_process_also_exclude_each_other(tmp_path: Path) -> None:
    first = LoopLock(tmp_path / "goal.md").acquire()
    try:
        with pytest.raises(LockHeld, match="is held by pid"):
            LoopLock(tmp_path / "goal.md").acquire()
    finally:
        first.release()
    first.release()  # a second release is harmless
    assert LoopLock(tmp_path / "goal.md").acquire().held


def test_a_missing_folder_is_created(tmp_path: Path) -> None:
    lock = LoopLock(tmp_path / "new" / "goal.md")

    with lock:
        assert lock.path == tmp_path / "new" / "goal.md.lock"
        assert lock.path.exists()


def test_child_processes_do_not_inherit_the_lock(tmp_path: Path) -> None:
    lock = LoopLock(tmp_path / "goal.md").acquire()
    child = subprocess.Popen(["sleep", "30"], close_fds=False)
    try:
        lock.release()
        assert _try(tmp_path / "goal.md").stdout == "acquired\n"
    finally:
        child.kill()
        child.wait()


def test_a_garbled_lock_file_is_quoted_in_the_refusal(tmp_path: Path) -> None:
    lock = LoopLock(tmp_path / "goal.md").acquire()
    try:
        lock.path.write_text("not json", encoding="utf-8")
        refused = _try(tmp_path / "goal.md")
    finally:
        lock.release()

    assert "held by a process whose lock file reads 'not json'" in refused.stdout
