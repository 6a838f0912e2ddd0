"""What remembering webhook deliveries costs: taking one (an fsynced append, and now and then
the file cut back to the bound), loading the file when the watcher starts, and the file's size.

Takes ``--deliveries`` distinct deliveries (each with an id and a 2 kB body) into a fresh
:class:`~harness.connect.deliveries.SeenDeliveries` bound to ``--bound``, then loads the file
again and refuses every one of the most recent ``--bound`` as a replay.

Run from the repository root: ``python -m bench.webhook_deliveries [--deliveries 30000]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from harness.connect.deliveries import MAX_REMEMBERED, SeenDeliveries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deliveries", type=int, default=30_000)
    parser.add_argument("--bound", type=int, default=MAX_REMEMBERED)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="harness-bench-") as folder:
        path = Path(folder) / "deliveries"
        seen = SeenDeliveries(path, bound=args.bound)
        bodies = [(f"guid-{n:08d}", (f'{{"n": {n}, "pad": "' + "x" * 2000 + '"}').encode())
                  for n in range(args.deliveries)]  # fmt: skip
        took: list[float] = []
        for delivery, body in bodies:
            began = time.perf_counter()
            assert seen.take(delivery, body)
            took.append(time.perf_counter() - began)
        took.sort()
        began = time.perf_counter()
        again = SeenDeliveries(path, bound=args.bound)
        loaded = time.perf_counter() - began
        recent = bodies[-args.bound :]
        assert not any(again.take(delivery, body) for delivery, body in recent)
        size = path.stat().st_size
    print(f"deliveries taken: {args.deliveries}, bound {args.bound}")
    print(f"take: median {took[len(took) // 2] * 1e3:.3f} ms, "
          f"p99 {took[int(len(took) * 0.99)] * 1e3:.3f} ms, max {took[-1] * 1e3:.1f} ms")  # fmt: skip
    print(f"load at start: {loaded * 1e3:.1f} ms; file: {size / 1e6:.2f} MB")
    print(f"replays of the last {len(recent)} refused after the reload: all")


if __name__ == "__main__":
    main()
