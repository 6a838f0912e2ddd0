"""What a project's environment costs: making one, and one pytest gate run in it.

Prints the median time to make a virtual environment with ``uv venv`` (what ``[env] setup``
does) against ``python -m venv`` with pip and without, and the median duration of one pytest
gate on a one-test project with the harness's own Python against the project's venv (its
interpreter running the harness's pytest, under the ``bwrap`` backend where it works, else
``none``), the settings interleaved so that load on the machine hits them alike.

Run from the repository root: ``python -m bench.project_env [--runs 5]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import uv

from harness.sandbox import Sandbox
from harness.sandbox.bwrap import bwrap_problem
from harness.sandbox.python_env import PythonEnv
from harness.verify.pytest_gate import PytestGate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-env-") as tmp:
        root = Path(tmp)
        made = iter(range(10_000))

        def venv(*command: str) -> Callable[[], object]:
            return lambda: subprocess.run(
                [*command, str(root / f"v{next(made)}")], check=True, capture_output=True
            )

        makers = {
            "uv venv": venv(uv.find_uv_bin(), "venv", "--quiet", "--python", sys.executable),
            "python -m venv": venv(sys.executable, "-m", "venv"),
            "python -m venv --without-pip": venv(sys.executable, "-m", "venv", "--without-pip"),
        }
        report("making a venv", makers, args.runs)
        project = root / "project"
        (project / "tests").mkdir(parents=True)
        (project / "tests" / "test_one.py").write_text("def test_one():\n    assert True\n")
        subprocess.run([uv.find_uv_bin(), "venv", "-q", str(root / "env")], check=True)
        env = PythonEnv.of_venv(root / "env", "bench")
        assert env is not None
        backend = "none" if bwrap_problem() else "bwrap"
        gates = {
            f"harness's Python ({backend})": PytestGate("-q tests", sandbox=Sandbox(backend)),
            f"project's venv ({backend})": PytestGate(
                "-q tests", sandbox=Sandbox(backend, python_env=env)
            ),
        }
        report("one pytest gate", {name: check(gate, project) for name, gate in gates.items()},
               args.runs)  # fmt: skip


def check(gate: PytestGate, project: Path) -> Callable[[], object]:
    def run() -> object:
        report = gate.check(project)
        assert report.passed, report.summary
        return report

    return run


def report(title: str, settings: dict[str, Callable[[], object]], runs: int) -> None:
    times: dict[str, list[float]] = {name: [] for name in settings}
    for _ in range(runs):
        for name, action in settings.items():
            start = time.perf_counter()
            action()
            times[name].append(time.perf_counter() - start)
    print(f"{title} (median of {runs}):")
    for name, found in times.items():
        print(f"  {name:32} {statistics.median(found) * 1000:8.0f} ms")


if __name__ == "__main__":
    main()
