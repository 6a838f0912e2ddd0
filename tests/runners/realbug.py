"""A real bug for the external agents' runners: itsdangerous at the parent of its fix
ce5e2cd0af ("Forbid unsafe separators"), from the real-project matrix (tests/realworld).

The run's model is ``openai/fake-model`` behind a scripted OpenAI-compatible server on
127.0.0.1 (the provider), reached by the harness's gateway with the provider's key; the agent,
a real install, talks only to the gateway.
"""

from __future__ import annotations

import difflib
import json
import shutil
import subprocess
import tarfile
import textwrap
from pathlib import Path

import pytest

from tests.cli.test_cli import harness as cli_harness
from tests.conftest import git
from tests.openai_server import Request
from tests.runners.installed import AGENTS

CASE = Path(__file__).parents[1] / "realworld" / "cases" / "itsdangerous"
SOURCE = "itsdangerous.py"
TEST_ID = "tests.py::SignerTestCase::test_sign_invalid_separator"
GOAL = f"The test {TEST_ID} fails. Fix {SOURCE}, not the tests."
PROVIDER_KEY = "sk-provider-" + "c4n4ry9Qx7Lm2Vb8Np3Kw6"
"""The provider's key: the harness holds it, the agent must never see it."""
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


def project(root: Path, *, runner: str, program: Path, api_base: str) -> Path:
    """The case's base as a repository of one commit, with a loop.toml running ``runner`` on
    the loop's model behind the provider at ``api_base``."""
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
        api_base = "{api_base}"
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
    )
    (root / ".gitignore").write_text(".harness/\nprogress/\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "test@example.com")
    git(root, "config", "user.name", "Test")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "itsdangerous at 10d548995409")
    return root


def harness(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``harness ARGS`` as a user runs it, the provider's key in its environment."""
    return cli_harness(*args, cwd=cwd, env={"OPENAI_API_KEY": PROVIDER_KEY})


def written(root: Path) -> dict[str, str]:
    """Every file the harness wrote for the project's runs (its records, progress, reports)."""
    return {
        str(path.relative_to(root)): path.read_text(errors="replace")
        for folder in (root / ".harness", root / "progress")
        for path in folder.rglob("*")
        if path.is_file()
    }


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
