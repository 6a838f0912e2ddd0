"""A real bug for the external agents' runners: itsdangerous at the parent of its fix
ce5e2cd0af ("Forbid unsafe separators"), from the real-project matrix (tests/realworld).

The run's model is ``openai/fake-model`` behind a scripted OpenAI-compatible server on
127.0.0.1 (the provider), reached by the harness's gateway with the provider's key; the agent,
a real install, talks only to the gateway.
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

import pytest

from harness.observe.trajectory import Trajectory
from tests.conftest import git
from tests.openai_server import Request

CASE = Path(__file__).parents[1] / "realworld" / "cases" / "itsdangerous"
SOURCE = "itsdangerous.py"
TEST_ID = "tests.py::SignerTestCase::test_sign_invalid_separator"
GOAL = f"The test {TEST_ID} fails. Fix {SOURCE}, not the tests."
PROVIDER_KEY = "sk-provider-" + "c4n4ry9Qx7Lm2Vb8Np3Kw6"
"""The provider's key: the harness holds it, the agent must never see it."""
AGENTS = Path("/opt/harness-agents")
ASSIGNMENT = "        self.sep = sep\n"
WRONG = (
    "        self.sep = want_bytes(sep)\n"
    "        if self.sep == b'-':\n"
    "            raise ValueError('This separator is not allowed.')\n"
)
"""A fix that refuses ``-`` with the wrong words: the upstream test wants them."""


def agent_program(venv: str, program: str, requirement: str) -> Path:
    """The agent's program as .ci/run installs it, else on PATH; skip (saying how to install
    it) when it is in neither place."""
    installed = AGENTS / venv / "bin" / program
    if installed.is_file():
        return installed
    found = shutil.which(program)
    if found is None:
        pytest.skip(
            f"{program} is not installed: .ci/run installs it with python3 -m venv {AGENTS / venv}"
            f" && {AGENTS / venv}/bin/pip install {requirement} (that install failed or was not run)"
        )
    return Path(found)


def base_source() -> str:
    with tarfile.open(CASE / "base.tar.gz") as archive:
        member = archive.extractfile(SOURCE)
        assert member is not None
        return member.read().decode()


def fixed_source() -> str:
    return (CASE / "fix" / SOURCE).read_text()


def wrong_source() -> str:
    """The source after the wrong fix."""
    base = base_source()
    assert base.count(ASSIGNMENT) == 1
    return base.replace(ASSIGNMENT, WRONG)


def project(root: Path, *, runner: str, program: Path, extra: str = "") -> Path:
    """The case's base as a repository of one commit, with a loop.toml running ``runner``."""
    root.mkdir(parents=True)
    with tarfile.open(CASE / "base.tar.gz") as archive:
        archive.extractall(root, filter="data")
    (root / "loop.toml").write_text(
        textwrap.dedent(f"""\
        name = "separator"
        goal = "{GOAL}"
        model = "openai/fake-model"
        max_iterations = 2
        [model_options]
        api_base = "{{api_base}}"
        num_retries = 0
        [agent]
        runner = "{runner}"
        path = "{program}"
        [critic]
        enabled = false
        [[gates]]
        type = "pytest"
        args = "{TEST_ID}"
        """)
        + extra
    )
    (root / ".gitignore").write_text(".harness/\nprogress/\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "test@example.com")
    git(root, "config", "user.name", "Test")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "itsdangerous at 10d548995409")
    return root


def point_at(root: Path, api_base: str) -> None:
    """Point the loop's model at the provider (a port known only once the server runs)."""
    loop = root / "loop.toml"
    loop.write_text(loop.read_text().replace("{api_base}", api_base))


def harness(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``harness ARGS`` as a user runs it, with the provider's key in its environment."""
    env = {**os.environ, "OPENAI_API_KEY": PROVIDER_KEY, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("HARNESS_MODEL", None)
    return subprocess.run(
        [sys.executable, "-m", "harness.cli.main", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def run_folder(root: Path) -> Path:
    (folder,) = (root / ".harness" / "runs").iterdir()
    return folder


def events(root: Path) -> list[dict[str, object]]:
    path = run_folder(root) / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def first_task(root: Path, round_number: int) -> str:
    """What the agent sent as its task in its first request of ``round_number``, as recorded."""
    calls = [c for c in Trajectory.load(run_folder(root)).calls() if c.step.round == round_number]
    assert calls, f"no model call recorded in round {round_number}"
    users = [m["content"] for m in calls[0].messages if m["role"] == "user"]
    return "\n".join(str(text) for text in users)


def key_only_in_auth(requests: list[Request]) -> list[str]:
    """Where the provider received the provider's key other than in its own Authorization
    header (the gateway's), or the per-run token at all: the list must be empty."""
    found = []
    for number, request in enumerate(requests, 1):
        headers = {k: v for k, v in request.headers.items() if k != "authorization"}
        if PROVIDER_KEY in request.raw.decode() or PROVIDER_KEY in json.dumps(headers):
            found.append(f"request {number}: the key in its body or headers")
        if request.headers.get("authorization") != f"Bearer {PROVIDER_KEY}":
            found.append(f"request {number}: authorization {request.headers.get('authorization')}")
        if "harness-" in json.dumps(request.headers):
            found.append(f"request {number}: a gateway token in its headers")
    return found


def search_replace(path: str, before: str, after: str) -> str:
    """aider's SEARCH/REPLACE blocks turning ``before`` into ``after`` (each hunk with a line of
    context, each search text found once: a name of a file of the repository in them would make
    aider add that file and ask again)."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    blocks = []
    for group in difflib.SequenceMatcher(a=old, b=new).get_grouped_opcodes(1):
        a0, a1, b0, b1 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        search, replace = "".join(old[a0:a1]), "".join(new[b0:b1])
        assert before.count(search) == 1, search
        blocks.append(
            f"{path}\n```python\n<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n```\n"
        )
    return "\n".join(blocks)
