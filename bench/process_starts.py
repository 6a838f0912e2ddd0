"""How many programs a whole ``harness run examples/bugfix`` starts, and how many of them are git.

A repository holding the bug-fix example is built in a temporary folder (as bench/repo_size.py
builds it, without filler files) and ``harness run examples/bugfix --restart`` runs there
``--runs`` times, each under ``strace -f`` (every descendant followed: git, the sandbox, the
agent's commands, the gates' pytest and ruff). The first run makes its worktree and runs the
baseline at the base commit; the later ones take the worktree the previous run parked and the
cached baseline. Printed per run:

* programs started: ``execve`` calls that succeeded (a process replaced by a new program), and
  the failed ones beside (a program looked up along ``PATH``: one attempt per folder before it);
* git processes, and among them the ``git config`` listings that read the repository's config
  for the harness's hardening options (``harness/workspace/git_hardening.py``);
* the programs started most often.

    python bench/process_starts.py [--runs 2]

Needs ``strace`` (Debian: ``apt-get install strace``); without it the bench says so and exits 2.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import repo_size  # noqa: E402

# "1234 execve("/usr/bin/git", ["git", ...], ...) = 0", split over an "<unfinished ...>" line
# and a "<... execve resumed>) = 0" one when another traced process wrote in between.
_CALL = re.compile(r'^(\d+) +execve\("([^"]*)", \[(.*?)\]')
_RESUMED = re.compile(r"^(\d+) +<\.\.\. execve resumed>")
_RESULT = re.compile(r"\) = (-?\d+)")
# An argument that is pytest (or a path to it), or code run with -c that speaks of pytest (the
# pytest gate's: ``python -I -B -c <its reporter>``).
_PYTEST = re.compile(r'"([^"]*/)?pytest"|"-c", "(?:[^"\\]|\\.)*pytest')
# The pytest gate's own runs (a round's gate, a baseline at the base commit): its reporter's text
# is the code run with -c (after the prelude a project's environment adds).
_GATE = re.compile(r'"-c", "(?:[^"\\]|\\.)*The pytest gate\'s reporter')


@dataclass
class Starts:
    """The programs one traced run started."""

    programs: collections.Counter[str] = field(default_factory=collections.Counter)  # by name
    failed: int = 0
    git: int = 0
    config_listings: int = 0
    pytest: int = 0  # Python started to run pytest (``-m pytest``, a ``pytest`` script, the gate's)
    gate_pytest: int = 0  # of which the pytest gate's (rounds and baselines), not the agent's

    def add(self, path: str, argv: str, result: int) -> None:
        if result != 0:
            self.failed += 1
            return
        name = Path(path).name
        self.programs[name] += 1
        if (name.startswith("python") or name == "pytest") and _PYTEST.search(argv):
            self.pytest += 1
            self.gate_pytest += bool(_GATE.search(argv))
        if name == "git":
            self.git += 1
            if '"config"' in argv and ('"--show-origin"' in argv or '"--get-regexp"' in argv):
                self.config_listings += 1


def parse(trace: Path) -> Starts:
    """What ``trace`` (``strace -f -e trace=execve`` output) shows was started."""
    starts = Starts()
    pending: dict[str, tuple[str, str]] = {}
    for line in trace.read_text(errors="replace").splitlines():
        call, resumed = _CALL.match(line), _RESUMED.match(line)
        result = _RESULT.search(line)
        if call and result:
            starts.add(call.group(2), call.group(3), int(result.group(1)))
        elif call:
            pending[call.group(1)] = (call.group(2), call.group(3))
        elif resumed and result and resumed.group(1) in pending:
            starts.add(*pending.pop(resumed.group(1)), int(result.group(1)))
    return starts


def traced(
    command: list[str], cwd: Path, env: dict[str, str], trace: Path
) -> tuple[Starts, subprocess.CompletedProcess[str]]:
    """``command`` run in ``cwd`` under ``strace -f``: what it and its descendants started."""
    strace = ["strace", "-f", "-qq", "-v", "-s", "4096", "-e", "trace=execve", "-o", str(trace)]
    done = subprocess.run(
        [*strace, *command], cwd=cwd, env=env, capture_output=True, text=True, timeout=900,
        check=False,
    )  # fmt: skip
    return parse(trace), done


def traced_run(example: Path, trace: Path, env: dict[str, str]) -> tuple[Starts, str]:
    """One ``harness run`` of ``example`` under strace: what it started, and its stop line."""
    command = [sys.executable, "-m", "harness.cli.main", "run", str(example), "--restart"]
    starts, done = traced(command, example.parent.parent, env, trace)
    lines = (done.stdout + done.stderr).splitlines()
    last = next((s for s in lines if s.startswith("stop:")), "(no stop line)")
    if done.returncode != 0:
        raise SystemExit(f"harness run exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return starts, last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2, help="runs from one base commit")
    args = parser.parse_args()
    if shutil.which("strace") is None:
        print("strace is not installed (apt-get install strace): nothing to count")
        raise SystemExit(2)
    with tempfile.TemporaryDirectory(prefix="harness-bench-") as scratch:
        example = repo_size.build_repository(Path(scratch) / "repo", 0)
        env = {**os.environ, "XDG_STATE_HOME": str(Path(scratch) / "state")}
        for run in range(1, args.runs + 1):
            starts, last = traced_run(example, Path(scratch) / f"trace-{run}", env)
            kind = "fresh worktree, baseline" if run == 1 else "parked worktree, cached baseline"
            print(f"run {run} ({kind}): {last}")
            print(
                f"  programs started {sum(starts.programs.values())}"
                f" (failed execve along PATH: {starts.failed});"
                f" git {starts.git}, of which config listings {starts.config_listings};"
                f" pytest {starts.pytest} (the gate's {starts.gate_pytest})"
            )
            common = ", ".join(f"{name} {n}" for name, n in starts.programs.most_common(8))
            print(f"  most started: {common}")


if __name__ == "__main__":
    main()
