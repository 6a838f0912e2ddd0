"""What the tests of the real external agents share: the installed program (or the reason it is
not there), a small repository with a real bug, its loop.toml, and what the trajectory says each
round's session received."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.observe.trajectory import Trajectory
from tests.conftest import make_repo

AGENTS = Path("/opt/harness-agents")
"""Where .ci/run installs each agent (``<name>/``), or writes why it could not
(``<name>.failed``)."""
BUGGY = "def add(a, b):\n    return a - b\n"
WRONG = "def add(a, b):\n    return a * b\n"
RIGHT = "def add(a, b):\n    return a + b\n"
TESTS = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
FAILING = "tests/test_calc.py::test_add"
PROBE = (
    "{ env; cat /proc/*/environ; } > environments.txt 2>/dev/null; "
    "grep -rlsE 'pr0v1der(pr0v1der){5}' . \"$HOME\" /tmp > found.txt; echo probed"
)
"""An agent's command writing down every environment it can read, and every file in its worktree,
HOME and /tmp that holds the provider's key (the tests' keys hold ``pr0v1der`` six times; the
pattern does not match itself, so the agent's own record of the command is not found)."""

LOOP = """\
name = "fix-add"
goal = "make the tests pass"
model = "{model}"
isolation = "branch"
max_iterations = {rounds}

[agent]
runner = "{runner}"
path = "{program}"

[model_options]
api_base = "{api_base}"
timeout = 30
num_retries = 0

[critic]
enabled = false

[[gates]]
type = "pytest"
args = "tests"
{extra}"""


def program(folder: str, name: str) -> Path:
    """The agent's program as .ci/run installs it, else on PATH; else the test is skipped with
    why it is missing (the install's failure when .ci/run wrote one)."""
    installed = AGENTS / folder / "node_modules" / ".bin" / name
    if installed.is_file():
        return installed
    found = shutil.which(name)
    if found:
        return Path(found)
    failed = AGENTS / f"{folder}.failed"
    if failed.is_file():
        pytest.skip(failed.read_text().strip())
    pytest.skip(f"{name} is not installed (.ci/run installs it into {AGENTS / folder})")


def buggy_repo(path: Path, runner: str, program: Path, model: str, api_base: str, *,
               rounds: int = 2, extra: str = "") -> Path:  # fmt: skip
    """A git repository whose ``add`` subtracts, its test, and a loop.toml running ``runner``."""
    loop = LOOP.format(
        model=model, rounds=rounds, runner=runner, program=program, api_base=api_base,
        extra=extra,
    )  # fmt: skip
    files = {"calc.py": BUGGY, "tests/test_calc.py": TESTS, "loop.toml": loop}
    files[".gitignore"] = ".harness/\nprogress/\nenvironments.txt\nfound.txt\n"
    return make_repo(path, files)


def run_folder(root: Path) -> Path:
    (folder,) = (root / ".harness" / "runs").iterdir()
    return folder


def tasks_by_round(root: Path) -> dict[int, str]:
    """The first request of each round's session as the trajectory recorded it (the gateway's
    record of what the agent sent), its messages as one text (long ones read back from the
    trajectory's side folder)."""
    firsts: dict[int, str] = {}
    for call in Trajectory.load(run_folder(root)).calls():
        if call.step.round is not None:
            firsts.setdefault(call.step.round, json.dumps(call.messages))
    return firsts
