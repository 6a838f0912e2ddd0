"""What one pytest gate run costs: the median wall time of ``PytestGate("tests").check``.

Runs the gate on a copy of the bug-fix example's project (47 tests) ``--runs`` times with the
bug in place (7 tests fail) and with it fixed (all pass), the two interleaved so that load on the
machine hits them alike, under the default sandbox, and prints each median and spread.

Run from the repository root: ``python -m bench.pytest_gate [--runs 15]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from harness.sandbox import default_sandbox
from harness.verify.gates import PytestGate

PROJECT = Path(__file__).resolve().parent.parent / "examples" / "bugfix" / "project"
BUG = "        return self.start <= day < self.end"
FIX = "        return self.start <= day <= self.end"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # the gate's own run, no stray plugins
    gate = PytestGate("tests")
    print(f"sandbox: {default_sandbox()!r}")
    with tempfile.TemporaryDirectory() as tmp:
        buggy = Path(tmp) / "buggy"
        fixed = Path(tmp) / "fixed"
        shutil.copytree(PROJECT, buggy)
        shutil.copytree(PROJECT, fixed)
        dates = fixed / "invoicing" / "dates.py"
        dates.write_text(dates.read_text().replace(BUG, FIX))
        times: dict[str, list[float]] = {"bug in place": [], "bug fixed": []}
        expected = {"bug in place": False, "bug fixed": True}
        gate.check(buggy)  # warm the file cache
        for _ in range(args.runs):
            for label, workspace in (("bug in place", buggy), ("bug fixed", fixed)):
                start = time.perf_counter()
                report = gate.check(workspace)
                times[label].append(time.perf_counter() - start)
                if report.passed is not expected[label]:
                    raise SystemExit(f"{label}: unexpected verdict: {report.summary}")
    for label, seconds in times.items():
        spread = f"{min(seconds):.3f}-{max(seconds):.3f}"
        print(f"{label:>13}: median {statistics.median(seconds):.3f}s (range {spread}s, "
              f"{len(seconds)} runs)")  # fmt: skip


if __name__ == "__main__":
    main()
