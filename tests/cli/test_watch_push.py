"""A pushed branch starts a loop: a signed `push` delivery for a watched branch makes
`harness watch` fetch it, run the loop on the pushed commit and open the pull request into it."""

from __future__ import annotations

import io
import json
import subprocess
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest

from harness.cli.watch import Watcher, make_triggers
from harness.connect.triggers import WebhookTrigger
from harness.spec import LoopSpec
from tests.conftest import git, make_repo
from tests.github_server import GitHubServer, deliver, publish

TOKEN = "pushcanary-token-5150-value"
SECRET = "push-hook-secret-31"


def _project(tmp_path: Path, server: GitHubServer) -> Path:
    project = make_repo(tmp_path / "project", {"calc.py": "def add(a, b):\n    return a + b\n"})
    author = [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "seen\n"}},
              "noted"]  # fmt: skip
    (tmp_path / "author.json").write_text(json.dumps(author))
    return publish(project, server, textwrap.dedent(f"""\
        name = "lint"
        goal = "keep the pushed work tidy"
        model = "scripted:../author.json"
        max_iterations = 1
        [critic]
        enabled = false
        [[gates]]
        type = "command"
        name = "pushed"
        cmd = "test -f feature.txt"
        [github]
        repo = "acme/widgets"
        api_url = "{server.url}"
        token_env = "HOST_PASS_FOR_PUSH"
        [[connectors]]
        type = "pull_request"
        [[triggers]]
        type = "webhook"
        port = 0
        secret_env = "PUSH_HOOK_SECRET"
        branches = ["feature/*"]
        """))  # fmt: skip


def _push_elsewhere(tmp_path: Path, remote: Path, branch: str) -> str:
    """Someone else pushes ``branch`` (with feature.txt) to the remote; its head."""
    clone = tmp_path / f"clone-{branch.replace('/', '-')}"
    subprocess.run(["git", "clone", "-q", str(remote), str(clone)], check=True)
    git(clone, "config", "user.email", "dev@example.com")
    git(clone, "config", "user.name", "Dev")
    git(clone, "switch", "-q", "-c", branch)
    (clone / "feature.txt").write_text("new feature\n")
    git(clone, "add", "-A")
    git(clone, "commit", "-qm", "feature")
    git(clone, "push", "-q", "origin", branch)
    return git(clone, "rev-parse", "HEAD")


def _deliver(trigger: WebhookTrigger, payload: dict[str, object], delivery: str) -> int:
    return deliver(trigger, "push", payload, delivery, SECRET)[0]


def test_a_push_to_a_watched_branch_runs_the_loop_on_it_and_opens_a_pull_request_into_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOST_PASS_FOR_PUSH", TOKEN)
    monkeypatch.setenv("PUSH_HOOK_SECRET", SECRET)
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    with GitHubServer(token=TOKEN, remote=remote) as server:
        project = _project(tmp_path, server)
        pushed = _push_elsewhere(tmp_path, remote, "feature/login")
        other = _push_elsewhere(tmp_path, remote, "docs/typo")
        spec = LoopSpec.from_toml(project)
        (trigger,) = make_triggers(spec, now=datetime.now(UTC))
        assert isinstance(trigger, WebhookTrigger)
        out = io.StringIO()
        watcher = Watcher(spec, [trigger], out=out)
        try:
            push = {"ref": "refs/heads/feature/login", "after": pushed, "deleted": False}
            assert _deliver(trigger, push, "d-1") == 202
            unwatched = {"ref": "refs/heads/docs/typo", "after": other, "deleted": False}
            assert _deliver(trigger, unwatched, "d-2") == 202
            gone = {"ref": "refs/heads/feature/old", "after": "0" * 40, "deleted": True}
            assert _deliver(trigger, gone, "d-3") == 202
            watcher.tick()
            watcher.wait()
        finally:
            watcher.close()

    assert "PASSED" in out.getvalue(), out.getvalue()
    assert len(watcher.started) == 1  # the unwatched branch and the deleted one start nothing
    (pull,) = server.pulls
    assert pull["base"]["ref"] == "feature/login"
    run_branch = pull["head"]["ref"]
    assert run_branch.startswith("harness/lint-push-feature_2flogin.")
    # the run worked on the pushed commit (the gate saw feature.txt) and its work is on top
    git(project, "merge-base", "--is-ancestor", pushed, run_branch)
    assert git(project, "show", f"{run_branch}:notes.txt") == "seen"
    assert git(project, "rev-parse", "main") != pushed  # the user's branch is untouched
    (run_dir,) = (project / ".harness" / "runs").iterdir()
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    task = next(e["task"] for e in events if e["kind"] == "round_start")
    assert f"(the branch feature/login, as pushed at {pushed[:12]})" in task
    fired = (project / ".harness" / "watch" / "events.jsonl").read_text().splitlines()
    assert [
        (e["loop_name"], e["started"], e["branch"], e["commit"]) for e in map(json.loads, fired)
    ] == [("lint-push-feature_2flogin", True, "feature/login", pushed)]
    assert events[0]["kind"] == "trigger"
    assert events[0]["branch"] == "feature/login"
    written = [p for p in tmp_path.rglob("*") if p.is_file() and "remote.git" not in p.parts]
    for secret in (TOKEN, SECRET):
        assert [p for p in written if secret.encode() in p.read_bytes()] == []
        assert secret not in out.getvalue()
    assert (project / ".harness" / "watch" / "deliveries").read_text().count("id:") == 3
