"""What a resumed research run pays to carry the earlier run's archive and claim ledger.

Makes a project whose ``.harness/runs`` holds ``--runs`` run folders (each an event log of a
``run_start`` and 200 other events, on other branches), plus the earlier run of the resumed
loop: an archive of ``--sources`` fetched pages (20 KB each) and a ledger of ``--entries``
entries of 30 claims. Times finding the earlier run (the scan of every run's first events) and
the whole carry (the scan, every fetch recorded again with its bytes checked, the ledger copied).
Prints the figures (median of ``--repeat``).

    python bench/resume_carry.py [--runs 500] [--sources 60] [--entries 20] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.core.event_schema import RoundStart, RunStart  # noqa: E402
from harness.memory.run_state import RunState  # noqa: E402
from harness.observe.events import EVENTS_FILE, EventLog  # noqa: E402
from harness.observe.run_summary import RUNS_DIR  # noqa: E402
from harness.research.archive import ARCHIVE_DIR, SourceArchive  # noqa: E402
from harness.research.claim_ledger import LEDGER_FILE, Claim, record_claims  # noqa: E402
from harness.research.resume import carry_on_resume, earlier_run  # noqa: E402

BRANCH = "harness/bridge.1a2b3c4d.5e6f7a8b"


def make_project(root: Path, runs: int, sources: int, entries: int) -> None:
    for number in range(runs):
        run_id = f"{number:08x}"
        log = EventLog(root / RUNS_DIR / run_id / EVENTS_FILE, run_id=run_id)
        branch = f"harness/other.{number:08x}.{number:08x}"
        log.emit(
            RunStart(goal="g", model="m", max_iterations=9, workspace=str(root), branch=branch)
        )
        for round_number in range(200):
            log.emit(RoundStart(round=round_number + 1, max_iterations=200))
    earlier = root / RUNS_DIR / "5e6f7a8b"
    EventLog(earlier / EVENTS_FILE, run_id="5e6f7a8b").emit(
        RunStart(goal="g", model="m", max_iterations=9, workspace=str(root), branch=BRANCH)
    )
    archive = SourceArchive(earlier / ARCHIVE_DIR)
    for number in range(sources):
        body = (f"<p>page {number}</p>" * 1400).encode()[: 20 * 1024]
        archive.add(
            f"http://127.0.0.1:8000/{number}.html", body, headers={"content-type": "text/html"}
        )
    claims = {f"C{n}": Claim(text=f"claim {n}", citations=[("s-0", "q")]) for n in range(30)}
    for _ in range(entries):
        record_claims(earlier / LEDGER_FILE, claims)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--sources", type=int, default=60)
    parser.add_argument("--entries", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp())
    make_project(root, args.runs, args.sources, args.entries)
    finds, carries = [], []
    for attempt in range(args.repeat):
        run = root / RUNS_DIR / f"new{attempt:05d}"
        started = time.perf_counter()
        found = earlier_run(root, run, BRANCH, loop_name="bridge", workspace=root)
        finds.append(time.perf_counter() - started)
        assert found == root / RUNS_DIR / "5e6f7a8b", found
        archive = SourceArchive(run / ARCHIVE_DIR, own_only=True)
        carry = carry_on_resume(root, run, archive, loop_name="bridge", workspace=root)
        started = time.perf_counter()
        carry(RunState(branch=BRANCH), args.entries)
        carries.append(time.perf_counter() - started)
        assert len(archive.records()) == args.sources
    print(f"run folders scanned: {args.runs + 1}")
    print(f"find the earlier run: {statistics.median(finds):.3f} s")
    print(
        f"carry {args.sources} sources ({args.sources * 20} KB) and {args.entries} ledger entries"
        f" (scan included): {statistics.median(carries):.3f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
