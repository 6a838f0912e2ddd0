"""Secrets never leave by the back door: canaries in the environment, in the project's `.env` and
passed into the sandbox by `[sandbox] env`, printed by a failing gate and repeated by the agent,
reach no request the repository host or a webhook receives, no file the run or `harness watch`
writes (the state folder included) and no output; and the push token goes to its own host
only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import git, make_repo
from tests.github_server import GitHubServer

pytestmark = pytest.mark.slow

HOST_TOKEN = "ghp_" + "HostTokenCanary0123456789abcdefABCD"
IN_ENV = "env-canary-41c9d2e7"  # DEPLOY_API_KEY in the harness's environment
IN_DOTENV = "dotenv-canary-8b2f51"  # a plain name in the project's .env
IN_SANDBOX = "sandbox-canary-c7e3a0"  # STAGING_DB_PASSWORD, passed by [sandbox] env
CANARIES = (HOST_TOKEN, IN_ENV, IN_DOTENV, IN_SANDBOX)


def _everything_under(folder: Path) -> str:
    return "".join(
        p.read_bytes().decode("utf-8", "replace")
        for p in folder.rglob("*")
        if p.is_file() and not p.is_symlink() and ".git" not in p.relative_to(folder).parts
    )


def _project(tmp_path: Path, server: GitHubServer, *, isolation: str) -> Path:
    project = make_repo(
        tmp_path / "project",
        {".env": f"SERVICE_URL_PLAIN={IN_DOTENV}\n", ".gitignore": ".harness/\nprogress/\n"},
    )
    leak = "echo $DEPLOY_API_KEY $STAGING_DB_PASSWORD; cat .env"
    script = [
        {"name": "run_shell", "arguments": {"command": leak}},
        {"name": "write_file", "arguments": {"path": "out.txt", "content": "x\n"}},
        f"Done. I saw {IN_DOTENV} and {IN_SANDBOX}",
    ]
    (tmp_path / "script.json").write_text(json.dumps(script * 2))
    (project / "loop.toml").write_text(textwrap.dedent(f"""\
        name = "leaky"
        goal = "make the gate pass"
        model = "scripted:../script.json"
        max_iterations = 1
        isolation = "{isolation}"
        [critic]
        enabled = false
        [sandbox]
        env = ["DEPLOY_API_KEY", "STAGING_DB_PASSWORD"]
        [[gates]]
        type = "command"
        name = "leaky gate"
        cmd = "cat {project}/.env; echo key=$DEPLOY_API_KEY db=$STAGING_DB_PASSWORD; exit 1"
        [github]
        repo = "acme/widgets"
        api_url = "{server.url}"
        token_env = "HOST_PASS_FOR_TESTS"
        [[connectors]]
        type = "pull_request"
        on = ["escalate"]
        [[connectors]]
        type = "issue_comment"
        issue = 7
        on = ["escalate"]
        [[connectors]]
        type = "webhook"
        url_env = "CHAT_HOOK_URL"
        on = ["escalate"]
        [[triggers]]
        type = "issues"
        label = "harness"
        """))  # fmt: skip
    git(project, "add", "-A")
    git(project, "commit", "-qm", "loop")
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    git(project, "remote", "add", "origin", str(remote))
    return project


def _harness(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness.cli.main", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=240)  # fmt: skip


@pytest.mark.parametrize(
    ("command", "isolation"), [("run", "worktree"), ("run", "none"), ("watch", "worktree")]
)
def test_no_canary_reaches_the_host_a_webhook_a_file_or_the_output(
    tmp_path: Path, command: str, isolation: str
) -> None:
    state = tmp_path / "state"
    with GitHubServer(token=HOST_TOKEN, deadline=200) as server:
        # the issue that starts the watcher's run quotes two of them: outside input too
        server.add_issue(7, f"leaks {IN_DOTENV}", f"the key is {IN_ENV}", ["harness"])
        project = _project(tmp_path, server, isolation=isolation)
        env = {
            **os.environ,
            "HOST_PASS_FOR_TESTS": HOST_TOKEN,
            "CHAT_HOOK_URL": f"{server.url}/hook",
            "DEPLOY_API_KEY": IN_ENV,
            "STAGING_DB_PASSWORD": IN_SANDBOX,
            "XDG_STATE_HOME": str(state),
        }
        if command == "watch":
            done = _harness("watch", "--once", cwd=project, env=env)
        else:
            done = _harness("run", "--issue", "7", cwd=project, env=env)
        report = _harness("report", _run(project), "--html", "page.html", cwd=project, env=env)
    assert done.returncode == (0 if command == "watch" else 3), done.stdout + done.stderr
    assert report.returncode == 0, report.stderr
    sent = json.dumps([r.body for r in server.requests]) + json.dumps(server.hooks)
    posted = [r.path for r in server.requests if r.method == "POST"]
    assert "/repos/acme/widgets/issues/7/comments" in posted
    assert ("/repos/acme/widgets/pulls" in posted) is (isolation == "worktree")
    assert len(server.hooks) == 1
    assert "leaky gate" in sent  # the gate's failure went out: the check could fail
    # the state folder: its records; a round's snapshot keeps the workspace's files as they are
    records = [p for p in state.rglob("*") if p.is_file() and (
        p.name == "round.json" or "rounds" not in p.relative_to(state).parts)]  # fmt: skip
    written = _everything_under(project / ".harness") + "".join(p.read_text() for p in records)
    written += _everything_under(project / "progress") + (project / "page.html").read_text()
    if isolation == "none":
        assert "leaky gate" in "".join(p.read_text() for p in records if p.name == "round.json")
    if command == "watch":  # the watcher's own log, and the verdict it prints
        watched = (project / ".harness" / "watch" / "events.jsonl").read_text()
        assert '"trigger":"issues"' in watched.replace(" ", "")
        assert "leaky-issue-7 (run " in done.stdout
        assert "MAX_ITERATIONS: " in done.stdout
        assert "leaks [REDACTED]" in sent  # the issue's title, the pull request's
    outputs = done.stdout + done.stderr + report.stdout + report.stderr
    for canary in CANARIES:
        assert canary not in sent, canary
        assert canary not in written, canary
        assert canary not in outputs, canary
    assert "[REDACTED]" in sent


def _run(project: Path) -> str:
    (run_dir,) = (project / ".harness" / "runs").iterdir()
    return run_dir.name
