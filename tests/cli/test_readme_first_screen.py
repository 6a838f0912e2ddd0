"""The README's first screen, "Your own project, your own model", run as written on a project.

A small project of one's own with a failing test; the block's commands run in it as a user types
them (``harness`` on PATH, bash), the local server's line against an OpenAI-compatible server on
127.0.0.1 (tests/openai_server.py) in place of ``localhost:8000``. Only the hosted model's lines
(``export OPENAI_API_KEY=sk-...``, ``--model gpt-4o-mini``) are left out: they need a key.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import git, make_repo
from tests.models.test_http_loop import VERDICT
from tests.openai_server import OpenAIServer, Text, ToolCalls
from tests.test_docs_commands import ROOT, shim

pytestmark = pytest.mark.slow

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
HOSTED = ("export OPENAI_API_KEY=sk-", "harness run --model gpt-4o-mini")
LOCAL = "http://localhost:8000/v1"


def own_project_block() -> list[str]:
    """The README's block under "Your own project, your own model", comments left out."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    head, _, rest = readme.partition("**Your own project, your own model.**")
    assert rest, "the README lost its 'Your own project, your own model' paragraph"
    assert head.count("\n") < 20  # on the first screen
    block = re.search(r"```bash\n(.*?)```", rest, re.DOTALL)
    assert block is not None
    return [re.sub(r"\s+#.*$", "", line).strip() for line in block[1].splitlines()]


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(deadline=200) as running:
        yield running


def test_the_readme_s_own_project_block_runs_a_project_with_a_local_model(
    tmp_path: Path, server: OpenAIServer
) -> None:
    lines = own_project_block()
    assert lines[0] == "cd ~/my-project"
    assert sum(line.startswith(HOSTED) for line in lines) == 2
    local = [line for line in lines if LOCAL in line]
    assert len(local) == 1
    assert local[0].endswith("harness run --model openai/qwen2.5-coder")
    to_run = [line for line in lines[1:] if not line.startswith(HOSTED)]
    assert to_run[-1] == local[0]  # the run is the block's last line

    test = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    project = make_repo(tmp_path / "my-project", {"calc.py": BUGGY, "tests/test_calc.py": test})
    server.queue(
        ToolCalls((("call_1", "write_file", json.dumps({"path": "calc.py", "content": FIXED})),)),
        Text("add now adds."),
        VERDICT,
    )
    env = shim(tmp_path)
    for name in ("OPENAI_API_KEY", "OPENAI_API_BASE", "OPENAI_BASE_URL", "HARNESS_CRITIC_MODEL"):
        env.pop(name, None)
    script = "\n".join(to_run).replace(LOCAL, server.api_base)
    done = subprocess.run(["bash", "-e", "-c", script], cwd=project, env=env,
                          capture_output=True, text=True, timeout=240)  # fmt: skip

    assert done.returncode == 0, done.stdout + done.stderr
    assert "\nPASSED: round 1 passed every gate and the review" in done.stdout
    assert "ERROR" not in done.stdout
    bodies = [request.body for request in server.requests]
    assert [body["model"] for body in bodies] == ["qwen2.5-coder"] * 3
    assert {request.headers.get("authorization") for request in server.requests} == {"Bearer none"}
    assert [t["function"]["name"] for t in bodies[2]["tools"]] == ["verdict"]  # the critic
    assert (project / "calc.py").read_text() == BUGGY  # the user's checkout untouched
    [branch] = git(project, "branch", "--list", "harness/*", "--format=%(refname:short)").split()
    assert git(project, "show", f"{branch}:calc.py") == FIXED.strip()  # git strips the end
    committed = git(project, "show", "--name-only", "--format=%s", "main").splitlines()
    assert committed[0] == "harness loop"
    assert {"loop.toml", "skills/bugfix/SKILL.md", ".gitignore"} <= set(committed)
    assert git(project, "status", "--porcelain") == "?? progress/"  # the run's progress.md
    assert "passed" in (project / "progress" / "bugfix.md").read_text().lower()
