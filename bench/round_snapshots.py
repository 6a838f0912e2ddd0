"""What keeping every round costs outside git: one snapshot, a diff between two, and a restore.

A workspace of ``--files`` text files of ``--size`` bytes each (a content loop's folder is a few
files; a project worked on in place without git, hundreds) is snapshotted as a round, one file
changed, snapshotted again, diffed and restored. Prints the median of ``--repeat`` runs of each,
and the bytes a snapshot holds.

Run from the repository root: ``python -m bench.round_snapshots [--files 200] [--size 4096]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from harness.workspace.snapshots import Snapshots


def _median_ms(action: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "work"
        for n in range(args.files):
            path = work / f"part{n % 10}" / f"file{n}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text((f"line {n}\n" * args.size)[: args.size])
        kept = Snapshots(Path(tmp) / "kept", work)
        take = _median_ms(lambda: kept.take(1, {"round": 1}), args.repeat)
        (work / "part0" / "file0.md").write_text("changed\n")
        kept.take(2, {"round": 2})
        diff = _median_ms(lambda: kept.diff(1, 2), args.repeat)
        restore = _median_ms(lambda: kept.restore(1), args.repeat)
        held = sum(p.stat().st_size for p in (Path(tmp) / "kept" / "1").rglob("*") if p.is_file())
    print(f"workspace: {args.files} files of {args.size} bytes")
    print(f"snapshot (take):  {take:8.1f} ms   holds {held} bytes")
    print(f"diff of 2 rounds: {diff:8.1f} ms")
    print(f"restore:          {restore:8.1f} ms")


if __name__ == "__main__":
    main()
