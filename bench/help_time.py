"""How long ``harness --help`` takes, and proof that it does not import litellm.

Runs ``python -m harness.cli.main --help`` (and the ``harness`` console script, when installed) a
number of times in fresh processes and prints the median wall time, beside the time of
``python -c "import harness"`` and of a bare interpreter for comparison. Exits non-zero if the
help path imports litellm (checked with ``-X importtime``) or a command fails.

    python bench/help_time.py [--runs 10]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def wall_times(command: list[str], runs: int) -> list[float]:
    """Seconds each of ``runs`` fresh runs of ``command`` took; a failing run stops the bench."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
        times.append(time.perf_counter() - started)
        if result.returncode != 0:
            raise SystemExit(f"{' '.join(command)} exited {result.returncode}:\n{result.stderr}")
    return times


def imported_modules(command: list[str]) -> set[str]:
    """Top-level package names ``python -X importtime`` reports for ``command``."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", *command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    names = set()
    for line in result.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip().split(".", 1)[0])
    return names


def report(label: str, times: list[float]) -> None:
    ms = [t * 1000 for t in times]
    print(
        f"{label:<36} median {statistics.median(ms):7.1f} ms"
        f"   min {min(ms):7.1f}   max {max(ms):7.1f}   ({len(ms)} runs)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="runs per command (default 10)")
    runs = parser.parse_args().runs

    help_args = ["-m", "harness.cli.main", "--help"]
    leaked = {"litellm", "openai"} & imported_modules(help_args)
    if leaked:
        raise SystemExit(f"harness --help imports {', '.join(sorted(leaked))}")
    print("harness --help imports neither litellm nor openai")

    report("python -c pass", wall_times([sys.executable, "-c", "pass"], runs))
    report('python -c "import harness"', wall_times([sys.executable, "-c", "import harness"], runs))
    report("python -m harness.cli.main --help", wall_times([sys.executable, *help_args], runs))
    script = shutil.which("harness")
    if script is None:
        print("harness console script: not installed (pip install -e . to measure it)")
    else:
        report(f"{script} --help", wall_times([script, "--help"], runs))


if __name__ == "__main__":
    main()
