"""What one pytest gate run costs: the median wall and CPU time of ``PytestGate("tests").check``.

Runs the gate on a copy of the bug-fix example's project (47 tests) ``--runs`` times with the
bug in place (7 tests fail) and with it fixed (all pass), the two interleaved so that load on the
machine hits them alike, under the default sandbox, and prints each median and spread, and the
median CPU time (user and system) of the processes the gate started, which load on the machine
sways less than the wall time (counted with ``--sandbox none`` only: bubblewrap's processes are
not reaped into the harness's account).

Run from the repository root: ``python -m bench.pytest_gate [--runs 15] [--sandbox none]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from harness.sandbox import Sandbox, default_sandbox
from harness.verify.pytest_gate import PytestGate

PROJECT = Path(__file__).resolve().parent.parent / "examples" / "bugfix" / "project"
BUG = "        return self.start <= day < self.end"
FIX = "        return self.start <= day <= self.end"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--sandbox", choices=["auto", "none"], default="auto")
    args = parser.parse_args()
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # the gate's own run, no stray plugins
    sandbox = Sandbox("none") if args.sandbox == "none" else default_sandbox()
    gate = PytestGate("tests", sandbox=sandbox)
    print(f"sandbox: {sandbox!r}")
    with tempfile.TemporaryDirectory() as tmp:
        buggy = Path(tmp) / "buggy"
        fixed = Path(tmp) / "fixed"
        shutil.copytree(PROJECT, buggy)
        shutil.copytree(PROJECT, fixed)
        dates = fixed / "invoicing" / "dates.py"
        dates.write_text(dates.read_text().replace(BUG, FIX))
        times: dict[str, list[float]] = {"bug in place": [], "bug fixed": []}
        cpu: dict[str, list[float]] = {"bug in place": [], "bug fixed": []}
        expected = {"bug in place": False, "bug fixed": True}
        gate.check(buggy)  # warm the file cache
        for _ in range(args.runs):
            for label, workspace in (("bug in place", buggy), ("bug fixed", fixed)):
                start, used = time.perf_counter(), _children_cpu()
                report = gate.check(workspace)
                times[label].append(time.perf_counter() - start)
                cpu[label].append(_children_cpu() - used)
                if report.passed is not expected[label]:
                    raise SystemExit(f"{label}: unexpected verdict: {report.summary}")
    for label, seconds in times.items():
        spread = f"{min(seconds):.3f}-{max(seconds):.3f}"
        print(f"{label:>13}: median {statistics.median(seconds):.3f}s (range {spread}s, "
              f"{len(seconds)} runs); CPU median {statistics.median(cpu[label]):.3f}s")  # fmt: skip


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    main()
