"""What a round costs as the repository grows: the bug-fix example beside 300, then 20,000 files.

For each size a synthetic git repository is built: ``examples/bugfix`` (its project, loop.toml
and scripted trajectory) and ``skills/bugfix`` copied in, beside ``--files`` small files spread
over folders of 200 (``vendor/d000/f00000.txt`` ...), all in one commit. The example's two-round
scripted loop (round 1 fails the tests, round 2 passes) then runs on it in process, in its own
worktree, ``--runs`` times from the same base commit (``--restart`` each time). Printed per size:

* the wall time of each whole run (worktree made, rounds, worktree removed);
* the harness's own time per round: the round's wall time less what ran in the sandbox (the
  agent's commands and the gates: the tests, the linter) and the model's replies;
* how many times the suite ran for the harness (the gates' pytest, the baselines at the base
  commit) and for the agent (its own ``pytest`` commands); the harness's count against its
  target, once per round plus once per base commit (the first run's baseline, cached after).

The ratio of the whole first run's wall time (largest size over smallest) is printed last, with
the target: at most 1.5.

    python bench/repo_size.py [--sizes 300 20000] [--runs 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.assemble.build import build_loop  # noqa: E402
from harness.assemble.named_models import Overrides  # noqa: E402
from harness.core.event_schema import EventBase, RoundEnd, RoundStart  # noqa: E402
from harness.models.scripted import ScriptedModel  # noqa: E402
from harness.sandbox.sandbox import Sandbox  # noqa: E402
from harness.spec import LoopSpec  # noqa: E402
from harness.verify.pytest_gate import PytestGate  # noqa: E402

TARGET = 1.5
FOLDER_FILES = 200


@dataclass
class Tally:
    """What one run spent where, on one clock."""

    sandboxed: list[tuple[float, float]] = field(default_factory=list)  # (start, end)
    model: list[tuple[float, float]] = field(default_factory=list)
    rounds: list[tuple[float, float]] = field(default_factory=list)
    harness_suite_runs: int = 0
    agent_suite_runs: int = 0
    _open_round: float | None = None

    def emit(self, event: EventBase) -> None:
        if isinstance(event, RoundStart):
            self._open_round = time.monotonic()
        elif isinstance(event, RoundEnd) and self._open_round is not None:
            self.rounds.append((self._open_round, time.monotonic()))
            self._open_round = None

    def own_time(self, start: float, end: float) -> float:
        """Wall time in [start, end] spent outside the sandbox and the model."""
        outside = sum(
            min(e, end) - max(s, start)
            for s, e in (*self.sandboxed, *self.model)
            if e > start and s < end
        )
        return end - start - outside


_tally: Tally | None = None


@contextmanager
def instrumented() -> Iterator[None]:
    """Time every sandboxed command and model reply; count the suite's runs."""
    sandbox_run = Sandbox.run
    gate_run = PytestGate.run
    complete = ScriptedModel.complete
    in_gate = False

    def timed_sandbox(self: Sandbox, command: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        try:
            return sandbox_run(self, command, **kwargs)
        finally:
            assert _tally is not None
            _tally.sandboxed.append((started, time.monotonic()))
            text = command if isinstance(command, str) else " ".join(command)
            if not in_gate and "pytest" in text:
                _tally.agent_suite_runs += 1

    def counted_gate(self: PytestGate, workspace: Any, args: Any = None) -> Any:
        nonlocal in_gate
        assert _tally is not None
        _tally.harness_suite_runs += 1
        in_gate = True
        try:
            return gate_run(self, workspace, args)
        finally:
            in_gate = False

    def timed_model(self: ScriptedModel, *args: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        try:
            return complete(self, *args, **kwargs)
        finally:
            assert _tally is not None
            _tally.model.append((started, time.monotonic()))

    Sandbox.run = timed_sandbox  # type: ignore[method-assign]
    PytestGate.run = counted_gate  # type: ignore[method-assign]
    ScriptedModel.complete = timed_model  # type: ignore[method-assign]
    try:
        yield
    finally:
        Sandbox.run = sandbox_run  # type: ignore[method-assign]
        PytestGate.run = gate_run  # type: ignore[method-assign]
        ScriptedModel.complete = complete  # type: ignore[method-assign]


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def build_repository(path: Path, files: int) -> Path:
    """A repository holding the bug-fix example and ``files`` filler files; its example folder."""
    example = path / "examples" / "bugfix"
    shutil.copytree(
        ROOT / "examples" / "bugfix",
        example,
        ignore=shutil.ignore_patterns(".harness", "__pycache__", ".pytest_cache", ".ruff_cache"),
    )
    shutil.copytree(ROOT / "skills" / "bugfix", path / "skills" / "bugfix")
    for number in range(files):
        folder = path / "vendor" / f"d{number // FOLDER_FILES:03}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{number:05}.txt").write_text(f"filler {number}\n")
    (path / ".gitignore").write_text(".harness/\n__pycache__/\n.pytest_cache/\n.ruff_cache/\n")
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(
        path,
        "-c", "user.name=bench", "-c", "user.email=bench@localhost",
        "commit", "-qm", "a repository with the bug-fix example",
    )  # fmt: skip
    return example


def one_run(example: Path) -> tuple[float, Tally, bool]:
    """Wall seconds of one whole run of the example, what it spent where, and whether it passed."""
    global _tally
    _tally = tally = Tally()
    config = LoopSpec.from_toml(example)
    script = example / "scripted-trajectory.json"
    overrides = Overrides(model=f"scripted:{script}", earlier="restart")
    started = time.monotonic()
    loop = build_loop(config, overrides=overrides, events=tally)
    result = loop.run()
    return time.monotonic() - started, tally, result.passed


def measure(files: int, runs: int, scratch: Path) -> float:
    """Print the figures of ``runs`` runs beside ``files`` filler files; the first run's time."""
    example = build_repository(scratch / f"repo-{files}", files)
    first = 0.0
    for run in range(1, runs + 1):
        wall, tally, passed = one_run(example)
        first = first or wall
        own = [tally.own_time(start, end) for start, end in tally.rounds]
        sandboxed = sum(end - start for start, end in tally.sandboxed)
        outside = wall - sum(end - start for start, end in tally.rounds)
        print(
            f"  {files:>6} files  run {run}: {wall:6.2f} s whole run"
            f" ({'passed' if passed else 'NOT passed'}, {len(tally.rounds)} rounds);"
            f" harness's own time per round {', '.join(f'{t:.2f}' for t in own)} s"
            f" (median {statistics.median(own) if own else 0:.2f});"
            f" sandboxed commands {sandboxed:.2f} s;"
            f" outside the rounds (worktree made and removed) {outside:.2f} s;"
            f" suite runs: harness {tally.harness_suite_runs}, agent {tally.agent_suite_runs}"
            f" {suite_runs_mark(tally.harness_suite_runs, len(tally.rounds), new_base=run == 1)}"
        )
    return first


def suite_runs_mark(counted: int, rounds: int, *, new_base: bool) -> str:
    """The harness's suite runs against the target: once per round (the gate) plus once per
    base commit (its baseline, cached for the later runs from the same base)."""
    expected = rounds + (1 if new_base else 0)
    return f"(target {expected}: {'ok' if counted == expected else 'OVER'})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[300, 20_000])
    parser.add_argument("--runs", type=int, default=2, help="runs per size, from one base commit")
    args = parser.parse_args()
    print(
        f"The bug-fix example's two-round scripted loop in repositories of {args.sizes} files"
        " beside the example"
    )
    with tempfile.TemporaryDirectory(prefix="harness-bench-") as scratch, instrumented():
        # The loop's state (cached base results) goes to this scratch folder, not the user's.
        os.environ["XDG_STATE_HOME"] = str(Path(scratch) / "state")
        firsts = {files: measure(files, args.runs, Path(scratch)) for files in args.sizes}
    small, large = min(args.sizes), max(args.sizes)
    ratio = firsts[large] / firsts[small]
    mark = "ok" if ratio <= TARGET else "OVER"
    print(f"(load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())})")
    print(f"first run, {large} files over {small} files: {ratio:.2f}x (target <= {TARGET}x) {mark}")


if __name__ == "__main__":
    main()
