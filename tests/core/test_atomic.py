"""Atomic writes: a reader, or a SIGKILL at any moment, sees the old file or the new one."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.core.atomic import atomic_write_text
from harness.core.nofollow import UnsafePath
from harness.memory.progress import Progress

ROOT = Path(__file__).resolve().parents[2]

WRITER = """
import sys
from pathlib import Path
from harness.core.atomic import atomic_write_text
from harness.core.nofollow import UnsafePath
target, *sources = sys.argv[1:]
texts = [Path(s).read_text(encoding="utf-8") for s in sources]
n = 0
while True:
    atomic_write_text(target, texts[n % 2])
    n += 1
    sys.stdout.write(".")
    sys.stdout.flush()
"""


def _version(name: str, lines: int) -> Progress:
    progress = Progress(name=name, goal="survive kills", max_iterations=100)
    for n in range(30):
        progress.record_attempt(f"failed {name}", summary=f"try {n}", tokens=n)
    progress.notes = "\n".join(f"{name} line {i} " + "x" * 60 for i in range(lines))
    return progress


def test_sigkill_mid_write_leaves_old_or_new_and_readers_never_see_a_torn_file(
    tmp_path: Path,
) -> None:
    versions = [_version("old", 40_000), _version("new", 60_000)]  # about 3 and 4.5 MB
    texts = [v.render() for v in versions]
    sources = []
    for i, text in enumerate(texts):
        sources.append(tmp_path / f"v{i}.md")
        sources[-1].write_text(text, encoding="utf-8")
    target = tmp_path / "progress.md"
    rng = random.Random(7)
    writes = reads = 0
    for _ in range(4):
        child = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(target), *map(str, sources)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
        )
        assert child.stdout is not None
        assert child.stdout.read(1) == b"."  # the first write is done
        os.set_blocking(child.stdout.fileno(), False)
        done = 1  # writes the child has reported (a dot each)
        # read for a random while, and until the child has written three times at least (on a
        # loaded machine a while may hold fewer): the kill then lands among its writes
        deadline = time.monotonic() + rng.uniform(0.05, 0.3)
        while time.monotonic() < deadline or done < 3:
            assert target.read_text(encoding="utf-8") in texts
            reads += 1
            done += len(child.stdout.read() or b"")
            assert child.poll() is None, "the writer stopped before it was killed"
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        os.set_blocking(child.stdout.fileno(), True)
        writes += done + len(child.stdout.read())
        child.stdout.close()
        assert Progress.load(target) in [v.model_copy(update={"path": target}) for v in versions]
    assert writes >= 12
    assert reads > 8


def test_replaces_content_and_keeps_permissions(tmp_path: Path) -> None:
    target = tmp_path / "notes.md"
    target.write_text("old", encoding="utf-8")
    target.chmod(0o600)

    assert atomic_write_text(target, "new\r\nline") == target

    assert target.read_bytes() == b"new\r\nline"
    assert target.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.md"]


def test_creates_a_missing_folder(tmp_path: Path) -> None:
    target = tmp_path / "new" / "deeper" / "progress.md"

    atomic_write_text(target, "text")

    assert target.read_text(encoding="utf-8") == "text"
    assert target.stat().st_mode & 0o777 == 0o644
    assert [p.name for p in target.parent.iterdir()] == ["progress.md"]


def test_a_failed_replace_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "taken"
    target.mkdir()

    with pytest.raises(UnsafePath, match="a folder, not a regular file"):
        atomic_write_text(target, "text")

    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]
