"""What archiving and checking a research round's sources costs, on the tests' local web.

Fetches every page of the 57-page web (tests/research_web.py: HTML and PDF, on 127.0.0.1)
through ``fetch_url`` into an archive, then times the citation check of findings that quote
each page once, cold (a fresh reader of the archive: every page's text extracted from its
archived bytes) and warm (the same reader again, as a later gate or round reads it: the bytes
checked against their hash, their text extracted once); and the convergence gate's ledger step
with the same claims, warm. Prints the figures.

    python bench/research_check.py [--runs 5]
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

from harness.research.archive import SourceArchive  # noqa: E402
from harness.research.citations import check_findings  # noqa: E402
from harness.research.claim_ledger import converged  # noqa: E402
from harness.research.web import WebConfig, fetch_page  # noqa: E402
from tests.research_web import serve_web  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp())
    archive = SourceArchive(folder / "sources")
    limits = WebConfig(allow_domains=["127.0.0.1"], timeout=10)
    claims = []
    with serve_web() as web:
        started = time.perf_counter()
        for site in (web.gazette, web.archive, web.survey):
            for path, (status, _, _) in site.pages.items():
                if status != 200:
                    continue
                text = fetch_page(f"{site.url}{path}", limits, archive)
                quote = text.split("\n\n")[-2].splitlines()[-1][:60]  # the article's last line
                claims.append(f'- C{len(claims) + 1}: x [source: {site.url}{path}] "{quote}"')
        fetched = time.perf_counter() - started
    findings = "\n".join(claims) + "\n"
    records = archive.records()
    stored = sum(f.stat().st_size for f in (folder / "sources" / "bytes").iterdir())
    cold, warm = [], []
    for times, reader in ((cold, lambda: SourceArchive(archive.folder)), (warm, lambda: archive)):
        for _ in range(args.runs):
            checked = reader()
            started = time.perf_counter()
            report = check_findings(findings, None, archive=checked)
            times.append(time.perf_counter() - started)
            if not report.passed:
                print(f"check failed: {report.problems[:3]}")
                return 1
    ledger = []
    for number in range(args.runs):
        started = time.perf_counter()
        converged(findings, folder / f"claims-{number}.jsonl", sources=None, archive=archive,
                  stable_rounds=1, min_sources=1)  # fmt: skip
        ledger.append(time.perf_counter() - started)
    print(f"pages fetched and archived: {len(records)} in {fetched:.2f} s "
          f"({1000 * fetched / len(records):.1f} ms a page), {stored:,} bytes kept")  # fmt: skip
    for label, times in (("cold", cold), ("warm", warm)):
        print(f"citation check, {len(claims)} citations, {label}: median "
              f"{statistics.median(times):.3f} s "
              f"({1000 * statistics.median(times) / len(claims):.1f} ms a citation)")  # fmt: skip
    print(f"convergence check (ledger + verification): median {statistics.median(ledger):.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
