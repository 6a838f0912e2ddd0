"""How long ``harness --help`` and ``harness status`` take cold, and proof of what they skip.

Runs ``python -m harness.cli.main --help`` (and the ``harness`` console script, when installed)
and ``harness status`` a number of times in fresh processes and prints the median wall time and
the median CPU time (user + system, which other work on the machine distorts less), beside
``python -c "import harness"`` and a bare interpreter for comparison. ``harness status`` is
timed twice: over this checkout's loops (none started: their loop.toml files are read), and in a
folder holding the bug-fix example's loop.toml and a progress file of two rounds (which it
reads too). Both have a target: < 0.15 s. As for an installed package, the
bytecode is cached (in a temporary ``PYTHONPYCACHEPREFIX``, written by one unmeasured run of each
command), even where the environment sets ``PYTHONDONTWRITEBYTECODE``. Exits non-zero if the help path imports
litellm, or ``status`` pydantic (checked with ``-X importtime``), or a command fails.

    python bench/help_time.py [--runs 10]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


STATUS_TARGET = 0.15
"""Seconds a cold ``harness status`` may take."""


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def wall_times(command: list[str], runs: int, cwd: Path = ROOT) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of each of ``runs`` fresh runs of ``command`` in ``cwd``; a failing
    run stops the bench."""
    walls, cpus = [], []
    subprocess.run(command, cwd=cwd, env=ENV, capture_output=True, timeout=120)  # bytecode
    for _ in range(runs):
        started, cpu = time.perf_counter(), _children_cpu()
        result = subprocess.run(
            command, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=120
        )
        walls.append(time.perf_counter() - started)
        cpus.append(_children_cpu() - cpu)
        if result.returncode != 0:
            raise SystemExit(f"{' '.join(command)} exited {result.returncode}:\n{result.stderr}")
    return walls, cpus


def imported_modules(command: list[str], *, top: bool = True, cwd: Path = ROOT) -> set[str]:
    """Module names ``python -X importtime`` reports for ``command`` run in ``cwd`` (top-level
    packages only, unless ``top`` is false)."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", *command],
        cwd=cwd,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    names = set()
    for line in result.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            names.add(name.split(".", 1)[0] if top else name)
    return names


def report(label: str, times: tuple[list[float], list[float]]) -> tuple[float, float]:
    """Print the wall and CPU times of ``label``; its median wall and CPU seconds."""
    ms, cpu = [t * 1000 for t in times[0]], [t * 1000 for t in times[1]]
    print(
        f"{label:<36} median {statistics.median(ms):7.1f} ms"
        f"   min {min(ms):7.1f}   max {max(ms):7.1f}   cpu median {statistics.median(cpu):6.1f}"
        f"   ({len(ms)} runs)"
    )
    return statistics.median(times[0]), statistics.median(times[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="runs per command (default 10)")
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as started:
        ENV["PYTHONPYCACHEPREFIX"] = cache
        measure(runs, started_loop(Path(started)))


def started_loop(folder: Path) -> Path:
    """``folder`` holding the bug-fix example's loop.toml and a progress file of two rounds."""
    sys.path.insert(0, str(ROOT))
    from harness.memory.progress import Progress
    from harness.spec.outline import LoopOutline

    config = folder / "loop.toml"
    shutil.copyfile(ROOT / "examples" / "bugfix" / "loop.toml", config)
    outline = LoopOutline.from_toml(config)
    progress = Progress(name=outline.name, goal="fix it", max_iterations=10)
    progress.add_item("the tests pass")
    progress.record_attempt("failed: 1/2 gates passed", gates=["pytest: failed"], critic_score=4)
    progress.record_attempt("passed", gates=["pytest: passed"], critic_score=9)
    outline.progress_path().parent.mkdir(parents=True)
    progress.save(outline.progress_path())
    return folder


def measure(runs: int, started: Path) -> None:
    """Check what the commands import, then time each; exits non-zero on a check that fails."""
    help_args = ["-m", "harness.cli.main", "--help"]
    leaked = {"litellm", "openai"} & imported_modules(help_args)
    if leaked:
        raise SystemExit(f"harness --help imports {', '.join(sorted(leaked))}")
    print("harness --help imports neither litellm nor openai")
    status_args = ["-m", "harness.cli.main", "status"]
    for label, cwd in (("loops not started", ROOT), ("a loop with progress", started)):
        if "pydantic" in imported_modules(status_args, cwd=cwd):
            raise SystemExit(f"harness status ({label}) imports pydantic")
    print("harness status imports no pydantic (loops not started, a loop with progress)")

    report("python -c pass", wall_times([sys.executable, "-c", "pass"], runs))
    report('python -c "import harness"', wall_times([sys.executable, "-c", "import harness"], runs))
    report("python -m harness.cli.main --help", wall_times([sys.executable, *help_args], runs))
    script = shutil.which("harness")
    if script is None:
        print("harness console script: not installed (pip install -e . to measure it)")
    else:
        report(f"{script} --help", wall_times([script, "--help"], runs))
    for label, cwd in (("loops not started", ROOT), ("a loop with progress", started)):
        wall, cpu = report(
            f"harness status, {label}", wall_times([sys.executable, *status_args], runs, cwd)
        )
        mark = "met" if wall < STATUS_TARGET else "NOT met on wall time (is the machine busy?)"
        print(
            f"harness status cold, {label}: median wall {wall * 1000:.0f} ms,"
            f" cpu {cpu * 1000:.0f} ms; target < {STATUS_TARGET * 1000:.0f} ms {mark}"
        )


if __name__ == "__main__":
    main()
