"""Connectors at a run's end, through `harness run`: a host that is down changes no verdict
and is reported; a webhook message, an artifact in a folder and on a branch, a push."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import git, make_repo
from tests.github_server import GitHubServer

pytestmark = pytest.mark.slow

TOKEN = "runcanary-token-77-value"


def _harness(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness.cli.main", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=240)  # fmt: skip


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _project(tmp_path: Path, extra: str, *, gate: str = "true") -> Path:
    project = make_repo(tmp_path / "project", {"report.md": "draft\n"})
    script = [{"name": "write_file", "arguments": {"path": "report.md", "content": "final\n"}},
              "wrote the report"]  # fmt: skip
    (tmp_path / "script.json").write_text(json.dumps(script))
    (project / "loop.toml").write_text(textwrap.dedent("""\
        name = "pub"
        goal = "write the report"
        model = "scripted:../script.json"
        max_iterations = 1
        [critic]
        enabled = false
        [[gates]]
        type = "command"
        cmd = "{gate}"
        """).format(gate=gate) + textwrap.dedent(extra))  # fmt: skip
    (project / ".gitignore").write_text(".harness/\nprogress/\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "loop")
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    git(project, "remote", "add", "origin", str(remote))
    return project


def test_a_connector_whose_server_is_down_leaves_the_verdict_and_says_so(tmp_path: Path) -> None:
    down = f"http://127.0.0.1:{_closed_port()}"
    project = _project(tmp_path, f"""\
        [github]
        repo = "acme/widgets"
        api_url = "{down}"
        token_env = "HOST_PASS_FOR_TESTS"
        [[connectors]]
        type = "pull_request"
        [[connectors]]
        type = "webhook"
        url_env = "CHAT_HOOK_URL"
        """)  # fmt: skip
    env = {**os.environ, "HOST_PASS_FOR_TESTS": TOKEN, "CHAT_HOOK_URL": f"{down}/hook"}

    done = _harness("run", cwd=project, env=env)

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("PASSED: ")
    pull = next(line for line in lines if line.startswith("connector pull_request: "))
    assert pull.startswith("connector pull_request: FAILED: GET /repos/acme/widgets/pulls: ")
    assert f"{down} cannot be reached" in pull
    assert "connector webhook: FAILED: the webhook cannot be reached" in done.stdout
    (run_dir,) = (project / ".harness" / "runs").iterdir()
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    connectors = [(e["connector"], e["ok"]) for e in events if e["kind"] == "connector"]
    assert connectors == [("pull_request", False), ("webhook", False)]
    end = next(e for e in events if e["kind"] == "run_end")
    assert end["passed"] is True
    assert end["stop_reason"] == "PASSED"
    assert "passed" in (project / "progress" / "pub.md").read_text().lower()
    # the push before the pull request did go through: only the host was down
    assert git(tmp_path / "remote.git", "branch", "--list").strip()
    report = _harness("report", run_dir.name, cwd=project, env=env)
    assert report.returncode == 0, report.stderr
    assert pull in report.stdout.splitlines()
    assert f"run {run_dir.name} · PASSED" in report.stdout
    assert TOKEN not in done.stdout + done.stderr + (run_dir / "events.jsonl").read_text()


def test_message_artifacts_and_push_on_a_pass_but_not_on_an_escalation(tmp_path: Path) -> None:
    with GitHubServer(token=TOKEN, deadline=120) as server:
        extra = f"""\
            [github]
            repo = "acme/widgets"
            api_url = "{server.url}"
            token_env = "HOST_PASS_FOR_TESTS"
            [[connectors]]
            type = "push"
            [[connectors]]
            type = "webhook"
            url_env = "CHAT_HOOK_URL"
            on = ["pass", "escalate"]
            [[connectors]]
            type = "artifact"
            file = "report.md"
            folder = "../published"
            [[connectors]]
            type = "artifact"
            file = "report.md"
            branch = "pages"
            """
        project = _project(tmp_path, extra)
        env = {**os.environ, "HOST_PASS_FOR_TESTS": TOKEN, "CHAT_HOOK_URL": f"{server.url}/hook"}
        done = _harness("run", cwd=project, env=env)
        failing = _project(tmp_path / "again", extra, gate="false")
        escalated = _harness("run", cwd=failing, env=env)

    assert done.returncode == 0, done.stderr
    assert (tmp_path / "published" / "report.md").read_text() == "final\n"
    assert git(project, "show", "pages:report.md") == "final"
    assert git(project, "rev-parse", "pages~0^{tree}")  # a commit of its own, no checkout moved
    assert (project / "report.md").read_text() == "draft\n"
    branch = git(tmp_path / "remote.git", "branch", "--format=%(refname:short)")
    assert branch.startswith("harness/")
    assert git(tmp_path / "remote.git", "show", f"{branch}:report.md") == "final"
    assert escalated.returncode == 3, escalated.stderr
    # the webhook is told of both; the push and the artifacts are for a pass only
    assert [message["text"].splitlines()[0] for message in server.hooks] == [
        f"**harness** loop `pub`, run `{_run_id(project)}`: **passed**",
        f"**harness** loop `pub`, run `{_run_id(failing)}`: **escalated (MAX_ITERATIONS)**",
    ]
    assert "connector push: pushed" in done.stdout
    assert "connector push" not in escalated.stdout
    assert not (tmp_path / "again" / "published").exists()
    assert git(tmp_path / "again" / "remote.git", "branch", "--list") == ""


def _run_id(project: Path) -> str:
    (run_dir,) = (project / ".harness" / "runs").iterdir()
    return run_dir.name
