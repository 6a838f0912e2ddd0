"""What verification costs: a verified harness round against mini-swe-agent on one real bug.

The instance is the more-itertools case of the real-project matrix (``tests/realworld/cases``:
the parent of upstream fix f51a53bfd2, "handle empty interleave_evenly input", with the fix's
test added). Each run gets a fresh repository of it. Both sides are fed the same replies by one
local OpenAI-compatible server (``tests/openai_server.py``), each reply one shell command: run
the failing test, apply the upstream fix (a three-line insertion, by a Python one-off), run the
test again, submit. The harness runs them with its own agent (``run_shell``, then ``submit``)
with the pytest gate (and its baseline at the base commit) and the critic (one more request,
its verdict) on, in its own worktree, without a sandbox (``backend = "none"``: mini has none);
mini-swe-agent runs them with its ``bash`` tool and verifies nothing. Every run must end with
exactly the upstream fix, or the bench stops.

First one run of each side under ``strace -f`` (see bench/process_starts.py) counts the
programs each starts, git and pytest among them (the harness's split into the pytest gate's runs,
a round's and the baseline's, against its target, and the agent's own); then ``--pairs`` pairs of untraced runs,
interleaved (the first of a pair alternating), time each: wall seconds, CPU seconds of the run
and everything it started (``RUSAGE_CHILDREN``), requests served. Printed: both sides' medians
and the median of the pairs' ratios (harness / mini). Not part of CI.

    python bench/verify_cost.py [--pairs 4] [--mini PATH]

mini comes from ``--mini``, else ``/opt/harness-agents/mini-swe-agent/bin/mini`` (where .ci/run
installs it), else ``mini`` on PATH, else it is installed (``pip install
mini-swe-agent==<the version the harness's runner expects>``) into this bench's own venv under
``~/.cache/harness-bench/``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import process_starts  # noqa: E402

from harness.runners.mini_swe_agent import VERSION  # noqa: E402
from tests.openai_server import OpenAIServer, ToolCalls  # noqa: E402

CASE = ROOT / "tests" / "realworld" / "cases" / "more-itertools"
SOURCE = "more_itertools/more.py"
TEST = json.loads((CASE / "case.json").read_text())["tests"][0]
GOAL = f"The test {TEST} fails. Fix the code, not the tests."
KEY = "sk-bench-provider-key"
ROUNDS = 1  # the loop's max_iterations: the gate runs once a round, the baseline once in all
MINI_VENV = Path.home() / ".cache" / "harness-bench" / "mini-swe-agent"
SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"  # mini's submission marker
FIX = (
    "python - <<'EOF'\n"
    "import pathlib\n"
    f"path = pathlib.Path({SOURCE!r})\n"
    "text = path.read_text()\n"
    "before = '    dims = len(lengths)\\n\\n'\n"
    "assert text.count(before) == 1\n"
    "path.write_text(text.replace(before, before + '    if not dims:\\n        return\\n\\n'))\n"
    "EOF"
)
COMMANDS = (
    ("Let me run the failing test.", f"python -m pytest -q {TEST}"),
    ("An empty input must yield nothing: return early when there are no iterables.", FIX),
    ("Running the test again.", f"python -m pytest -q {TEST}"),
)
LOOP = """\
name = "verify-cost"
goal = "{goal}"
model = "openai/fake-model"
max_iterations = {rounds}
[model_options]
api_base = "{api_base}"
num_retries = 0
[sandbox]
backend = "none"
[[gates]]
type = "pytest"
args = "{test}"
[critic]
threshold = 8
"""


def call(number: int, name: str, arguments: dict[str, object], say: str) -> ToolCalls:
    return ToolCalls(((f"call_{number}", name, json.dumps(arguments)),), content=say)


def harness_replies() -> list[ToolCalls]:
    """The author's commands through ``run_shell``, its ``submit``, then the critic's verdict."""
    replies = [call(n, "run_shell", {"command": c}, say) for n, (say, c) in enumerate(COMMANDS, 1)]
    replies.append(call(4, "submit", {"summary": "interleave_evenly returns on no input"}, "Done."))
    verdict = {"reasons": ["the early return is the fix"], "fixes": [], "score": 9}
    return [*replies, call(5, "verdict", verdict, "My verdict.")]


def mini_replies() -> list[ToolCalls]:
    """The same commands through mini's ``bash`` tool, then its submission."""
    replies = [call(n, "bash", {"command": c}, say) for n, (say, c) in enumerate(COMMANDS, 1)]
    submit = f"echo {SUBMIT}; echo 'interleave_evenly returns on no input'"
    return [*replies, call(4, "bash", {"command": submit}, "Submitting.")]


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout


def project(folder: Path, api_base: str) -> Path:
    """A fresh repository of the case's base, one commit, with the harness's loop.toml."""
    repo = folder / "more-itertools"
    repo.mkdir(parents=True)
    with tarfile.open(CASE / "base.tar.gz") as archive:
        archive.extractall(repo, filter="data")
    (repo / "loop.toml").write_text(
        LOOP.format(goal=GOAL, api_base=api_base, test=TEST, rounds=ROUNDS)
    )
    with (repo / ".gitignore").open("a") as ignore:
        ignore.write("\n.harness/\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-qm", "base")
    return repo


@dataclass(frozen=True)
class Side:
    """One of the two agents: how it is run on a repository, and where its fix ends up."""

    name: str
    replies: list[ToolCalls]

    def command(self, repo: Path, api_base: str, mini: Path) -> tuple[list[str], dict[str, str]]:
        env = {**os.environ, "OPENAI_API_KEY": KEY, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        if self.name == "harness":
            env["XDG_STATE_HOME"] = str(repo.parent / "state")  # no baseline kept from before
            return [sys.executable, "-m", "harness.cli.main", "run", "--quiet"], env
        config = repo.parent / "mini.bench.yaml"  # JSON is YAML
        config.write_text(json.dumps({
            "run": {"task": GOAL},
            "model": {"model_kwargs": {"api_base": api_base}, "cost_tracking": "ignore_errors"},
        }))  # fmt: skip
        env.update(
            MSWEA_CONFIGURED="true", MSWEA_SILENT_STARTUP="1",
            MSWEA_GLOBAL_CONFIG_DIR=str(repo.parent / "mini-config"),
            MSWEA_COST_TRACKING="ignore_errors", MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT="1",
        )  # fmt: skip
        argv = [
            str(mini), "--model", "openai/fake-model", "--yolo", "--exit-immediately",
            "--cost-limit", "0", "--output", str(repo.parent / "mini.trajectory.json"),
            "--config", "mini.yaml", "--config", str(config),
        ]  # fmt: skip
        return argv, env

    def fixed(self, repo: Path) -> str:
        """The source file as the run left it: on the run's branch, or in the checkout."""
        if self.name == "mini":
            return (repo / SOURCE).read_text()
        [branch] = git(repo, "for-each-ref", "--format=%(refname)", "refs/heads/harness/").split()
        return git(repo, "show", f"{branch}:{SOURCE}")


@dataclass(frozen=True)
class Run:
    wall: float
    cpu: float
    requests: int


def one_run(side: Side, server: OpenAIServer, mini: Path, *, trace: bool) -> tuple[Run, str]:
    """A run of ``side`` on a fresh repository; its figures, and (traced) what it started."""
    with tempfile.TemporaryDirectory(prefix="harness-bench-") as scratch:
        repo = project(Path(scratch), server.api_base)
        argv, env = side.command(repo, server.api_base, mini)
        server.queue(*side.replies)
        served = len(server.requests)
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        if trace:
            starts, done = process_starts.traced(argv, repo, env, Path(scratch) / "trace")
        else:
            done = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime
        if done.returncode != 0:
            raise SystemExit(f"{side.name} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
        if side.fixed(repo) != (CASE / "fix" / SOURCE).read_text():
            raise SystemExit(f"{side.name} did not end with the upstream fix")
        counted = ""
        if trace:
            counted = (
                f"programs started {sum(starts.programs.values())}, git {starts.git},"
                f" pytest {starts.pytest}"
            )
            if (
                side.name == "harness"
            ):  # one round, one base commit: the gate once, the baseline once
                counted += (
                    f" (the gate's {starts.gate_pytest}, target {ROUNDS} a round + 1 baseline"
                    f" = {ROUNDS + 1}; the agent's {starts.pytest - starts.gate_pytest})"
                )
        return Run(wall, cpu, len(server.requests) - served), counted


def mini_program(given: str | None) -> Path:
    """mini: as given, as .ci/run installs it, on PATH, or installed into the bench's venv."""
    for found in (given, "/opt/harness-agents/mini-swe-agent/bin/mini", shutil.which("mini")):
        if found and Path(found).is_file():
            return Path(found)
    program = MINI_VENV / "bin" / "mini"
    if not program.is_file():
        print(f"installing mini-swe-agent=={VERSION} into {MINI_VENV}")
        subprocess.run([sys.executable, "-m", "venv", str(MINI_VENV)], check=True)
        pip = [str(MINI_VENV / "bin" / "pip"), "install", "--quiet", f"mini-swe-agent=={VERSION}"]
        subprocess.run(pip, check=True)
    return program


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=4, help="timed pairs (default 4)")
    parser.add_argument("--mini", help="the mini program (default: see the module's doc)")
    args = parser.parse_args()
    if shutil.which("strace") is None:
        raise SystemExit("strace is not installed (apt-get install strace): nothing to count")
    mini = mini_program(args.mini)
    sides = (Side("harness", harness_replies()), Side("mini", mini_replies()))
    runs: dict[str, list[Run]] = {side.name: [] for side in sides}
    with OpenAIServer(deadline=3600) as server:
        for side in sides:
            run, counted = one_run(side, server, mini, trace=True)
            print(f"{side.name:>7} (traced): {counted}; {run.requests} requests")
        for pair in range(args.pairs):
            for side in sides if pair % 2 == 0 else sides[::-1]:
                runs[side.name].append(one_run(side, server, mini, trace=False)[0])
            print(f"pair {pair + 1}: " + ", ".join(
                f"{name} {rs[-1].wall:.1f} s wall, {rs[-1].cpu:.1f} s CPU"
                for name, rs in runs.items()
            ), flush=True)  # fmt: skip
    for name, rs in runs.items():
        walls, cpus = [r.wall for r in rs], [r.cpu for r in rs]
        print(
            f"{name:>7}: wall {statistics.median(walls):.1f} s [{min(walls):.1f}-{max(walls):.1f}],"
            f" CPU {statistics.median(cpus):.1f} s, {rs[0].requests} requests"
        )
    for figure in ("wall", "cpu"):
        ratios = [
            getattr(h, figure) / getattr(m, figure)
            for h, m in zip(runs["harness"], runs["mini"], strict=True)
        ]
        print(f"harness / mini, {figure}: median of {len(ratios)} pairs {statistics.median(ratios):.2f}x"
              f" (target <= 1.25x)")  # fmt: skip
    print(f"(load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())})")


if __name__ == "__main__":
    main()
