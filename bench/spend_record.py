"""What saving the spend record costs a model call: a durable write against the per-call one.

The outer loop rewrites ``progress/<name>.spend.json`` after every model call. This times
``--writes`` rewrites of a record in a temporary folder (on the disk of ``--dir``, default the
system's temporary folder) both ways: durable (file and folder fsynced: what every call paid
before, and what each round's end and the run's end still do) and per call (atomic, no fsync:
what a call pays now; see :mod:`harness.memory.spend` for what survives which crash).

    python bench/spend_record.py [--writes 200] [--dir PATH]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.core.usage import Usage  # noqa: E402
from harness.memory.spend import Spent, read_spent, write_spent  # noqa: E402


def times(path: Path, writes: int, *, durable: bool) -> list[float]:
    """Seconds of each of ``writes`` rewrites of the record at ``path``."""
    taken = []
    for call in range(1, writes + 1):
        spent = Spent.of(Usage(100 * call, 10 * call, 0.001 * call, call), 0.5 * call)
        started = time.perf_counter()
        write_spent(path, spent, durable=durable)
        taken.append(time.perf_counter() - started)
        assert read_spent(path) == spent
    return taken


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        path = Path(folder) / "loop.spend.json"
        print(f"Spend record rewrites ({args.writes} each, in {folder})")
        for label, durable in (("durable (2 fsyncs)", True), ("per call (no fsync)", False)):
            taken = times(path, args.writes, durable=durable)
            print(
                f"  {label:<20} median {statistics.median(taken) * 1e6:8.1f} us"
                f"   p90 {statistics.quantiles(taken, n=10)[8] * 1e6:8.1f} us"
                f"   total {sum(taken) * 1000:7.1f} ms"
            )


if __name__ == "__main__":
    main()
