"""What the sandbox costs per command: the median of ``run_shell("true")`` with each backend.

Runs the real ``run_shell`` tool ``--runs`` times per setting in a temporary workspace, the
settings interleaved so that load on the machine hits them alike, and prints the medians and
what the sandbox adds over a plain process (``run_command``, as before the sandbox existed).

The container backends are measured too where their engine runs and has ``--image``
(``--container-runs`` of them, in the first rounds: a container start costs far more).

Run from the repository root: ``python -m bench.sandbox_overhead [--runs 200]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from harness.core.errors import ConfigError
from harness.models.base import ToolCall
from harness.sandbox import Sandbox
from harness.sandbox.bwrap import bwrap_problem
from harness.sandbox.engine import ENGINES
from harness.sandbox.process import run_command
from harness.tools.builtin import default_tools
from harness.tools.toolkit import Toolbox, ToolContext


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--image", default="python:3.12-slim", help="for docker and podman")
    parser.add_argument("--container-runs", type=int, default=20)
    args = parser.parse_args()
    runs = args.runs
    toolbox = Toolbox(default_tools())
    call = ToolCall(id="b", name="run_shell", arguments={"command": "true"})
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        settings: dict[str, Callable[[], object]] = {
            "plain process (no sandbox layer)": lambda: run_command(
                "true", cwd=workspace, timeout=10
            ),
            "run_shell, backend none": _shell(toolbox, call, workspace, Sandbox("none")),
        }
        problem = bwrap_problem()
        if problem is None:  # a new network namespace is a large share of bwrap's cost
            settings["run_shell, bwrap, network on"] = _shell(
                toolbox, call, workspace, Sandbox("bwrap", network=True)
            )
            settings["run_shell, backend bwrap"] = _shell(toolbox, call, workspace,
                                                          Sandbox("bwrap"))  # fmt: skip
        containers, not_measured = _containers(toolbox, call, workspace, args.image)
        timings: dict[str, list[float]] = {name: [] for name in settings | containers}
        for index in range(runs):
            now = settings | (containers if index < args.container_runs else {})
            for name, run in now.items():
                start = time.perf_counter()
                run()
                timings[name].append(time.perf_counter() - start)
    medians = {name: statistics.median(values) * 1000 for name, values in timings.items()}
    base = medians["plain process (no sandbox layer)"]
    print(f"median of {runs} runs of `true` each ({args.container_runs} in a container)")
    for name, median in medians.items():
        print(f"  {name:34} {median:7.2f} ms   (+{median - base:6.2f} ms over a plain process)")
    if problem is not None:
        print(f"  bwrap not measured: {problem}")
    for line in not_measured:
        print(f"  {line}")


def _containers(
    toolbox: Toolbox, call: ToolCall, workspace: Path, image: str
) -> tuple[dict[str, Callable[[], object]], list[str]]:
    """run_shell through each engine that works here, and why the others are not measured."""
    runs: dict[str, Callable[[], object]] = {}
    skipped = []
    for engine in ENGINES:
        try:
            sandbox = Sandbox(engine, image=image)  # type: ignore[arg-type]
        except ConfigError as exc:
            skipped.append(f"{engine} not measured: {exc}")
            continue
        runs[f"run_shell, backend {engine}"] = _shell(toolbox, call, workspace, sandbox)
    return runs, skipped


def _shell(
    toolbox: Toolbox, call: ToolCall, workspace: Path, sandbox: Sandbox
) -> Callable[[], object]:
    ctx = ToolContext(workspace=workspace, sandbox=sandbox)
    return lambda: toolbox.execute(call, ctx)


if __name__ == "__main__":
    main()
