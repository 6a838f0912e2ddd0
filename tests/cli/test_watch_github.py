"""Issue in, pull request out, CI fed back: `harness watch` against a local GitHub-speaking host.

An issue labelled for the harness starts a loop (scripted models); its first passing round is
pushed to a bare "remote", a pull request is opened, and the host's failing check run on that
commit fails the round: its log is the next round's input. The second round's commit updates the
same pull request, its checks pass, the verdict lands in the pull request's body and a comment on
the issue. The token (kept in a variable whose name does not look secret, and planted in the
issue's body) reaches no event, file or output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from tests.conftest import git, make_repo, verdict_entry
from tests.github_server import GitHubServer, publish

TOKEN = "hostcanary-token-4242-value"  # lower case and digits with dashes: no key shape
CI_LOG = "FAILED test_ci.py::test_big - AssertionError: add(10**6, 1) is off by 2000002"


def _harness(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness.cli.main", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=240)  # fmt: skip


def _project(tmp_path: Path, server: GitHubServer) -> Path:
    project = make_repo(tmp_path / "project", {"calc.py": "def add(a, b):\n    return a - b\n"})
    write = lambda body: {"name": "write_file",  # noqa: E731
                          "arguments": {"path": "calc.py", "content": body}}  # fmt: skip
    author = [write("def add(a, b):\n    return a + b  # v1\n"), "fixed add",
              write("def add(a, b):\n    return b + a  # v2\n"), "fixed add again"]  # fmt: skip
    critic = [verdict_entry(9, ["adds"]), verdict_entry(9, ["adds, and CI agrees"])]
    (tmp_path / "author.json").write_text(json.dumps(author))
    (tmp_path / "critic.json").write_text(json.dumps(critic))
    return publish(project, server, textwrap.dedent(f"""\
        name = "fix"
        goal = "set by the issue"
        model = "scripted:../author.json"
        max_iterations = 3
        [critic]
        model = "scripted:../critic.json"
        [[gates]]
        type = "command"
        name = "calc"
        cmd = "python3 -c 'import calc; assert calc.add(2, 3) == 5'"
        [github]
        repo = "acme/widgets"
        api_url = "{server.url}"
        token_env = "HOST_PASS_FOR_TESTS"
        [[connectors]]
        type = "pull_request"
        on = ["pass", "escalate"]
        [[connectors]]
        type = "issue_comment"
        [ci]
        poll = 0.05
        settle = 10
        timeout = 60
        [[triggers]]
        type = "issues"
        label = "harness"
        """))  # fmt: skip


def _fail_first_commit(log_id: int) -> Any:
    seen: list[str] = []

    def checks(sha: str) -> list[dict[str, Any]]:
        if sha not in seen:
            seen.append(sha)
        failed = sha == seen[0]
        return [{"id": log_id if failed else 2, "name": "tests", "status": "completed",
                 "conclusion": "failure" if failed else "success",
                 "output": {"title": "tests", "summary": "1 failed" if failed else "ok"}}]  # fmt: skip

    return checks


def test_a_labelled_issue_becomes_a_pull_request_that_ci_sends_back_once(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    with GitHubServer(token=TOKEN, remote=remote, deadline=200) as server:
        server.checks = _fail_first_commit(11)
        server.logs[11] = f"collecting...\n{CI_LOG}\n1 failed"
        server.add_issue(7, "add() subtracts", f"calc.add(2, 3) must be 5. ({TOKEN})", ["harness"])
        server.add_issue(8, "a question", "how?", ["question"])
        project = _project(tmp_path, server)
        env = {**os.environ, "HOST_PASS_FOR_TESTS": TOKEN}

        done = _harness("watch", "--once", cwd=project, env=env)

    assert done.returncode == 0, done.stderr
    assert "not run" not in done.stdout, done.stdout
    assert all(request.authorised for request in server.requests)
    # one pull request from the run's branch, opened by round 1, updated by round 2 and the end
    (pull,) = server.pulls
    (run_dir,) = (project / ".harness" / "runs").iterdir()
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    start = next(e for e in events if e["kind"] == "run_start")
    branch = start["branch"]
    assert pull["head"]["ref"] == branch
    assert pull["base"]["ref"] == "main"
    assert pull["updates"] == 2
    assert pull["draft"] is False
    titles = {r.body.get("title") for r in server.requests if isinstance(r.body, dict)}
    assert titles - {None} == {"add() subtracts"}  # the CI wait's and the verdict's alike
    assert "**passed**" in pull["body"]
    assert "PASSED" in pull["body"]
    assert "`calc`" in pull["body"]
    assert "`ci`" in pull["body"]
    assert "Critic: 9.0/10" in pull["body"]
    assert "adds, and CI agrees" in pull["body"]
    assert "Refs #7" in pull["body"]
    # the remote holds round 2's commit: the pull request's head moved with the loop
    assert git(remote, "rev-parse", f"refs/heads/{branch}") == git(project, "rev-parse", branch)
    assert "# v2" in git(project, "show", f"{branch}:calc.py")
    # round 1 failed on CI only; its log was round 2's input
    gates = [(e["round"], e["name"], e["passed"]) for e in events if e["kind"] == "gate_report"]
    assert gates == [(1, "calc", True), (1, "ci", False), (2, "calc", True), (2, "ci", True)]
    tasks = {e["round"]: e["task"] for e in events if e["kind"] == "round_start"}
    assert CI_LOG in tasks[2]
    assert CI_LOG not in tasks[1]
    assert "calc.add(2, 3) must be 5" in tasks[1]  # the issue's body is the goal
    # a comment on the issue that started it, none elsewhere; only the labelled issue ran
    assert list(server.comments) == [7]
    assert "**passed**" in server.comments[7][0]
    watch_log = project / ".harness" / "watch" / "events.jsonl"
    triggers = [json.loads(line) for line in watch_log.read_text().splitlines()]
    assert [(t["trigger"], t["loop_name"], t["started"], t["issue"]) for t in triggers] == [
        ("issues", "fix-issue-7", True, 7)
    ]
    assert events[0]["kind"] == "trigger"
    assert events[0]["started_run"] == run_dir.name
    assert "connector pull_request: pull request #100" in done.stdout
    assert "connector issue_comment: commented on #7" in done.stdout
    # the token: in no file the run wrote, in no output, in nothing the host was sent
    written = [p for p in tmp_path.rglob("*") if p.is_file() and "remote.git" not in p.parts]
    assert [p for p in written if TOKEN.encode() in p.read_bytes()] == []
    assert TOKEN not in done.stdout + done.stderr
    assert "[REDACTED]" in tasks[1]
    sent = json.dumps([r.body for r in server.requests])
    assert TOKEN not in sent
