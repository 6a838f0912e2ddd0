"""The CI wait: what it decides when checks never finish, never appear, or the host fails."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path
from typing import Any

from harness.connect.ci import CiWaiter
from harness.connect.config import CiConfig
from harness.connect.connectors import Host
from harness.connect.github import GitHub
from harness.outer.options import CiRound
from tests.conftest import git, make_repo
from tests.github_server import GitHubServer

TOKEN = "ci-test-token-value"


class Clock:
    """Time that moves only when the waiter sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def _round(tmp_path: Path, server: GitHubServer) -> CiRound:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "branch", "harness/x/1")
    server.remote = remote
    return CiRound(1, git(repo, "rev-parse", "HEAD"), "harness/x/1", repo, "main", None)


def _waiter(server: GitHubServer, clock: Clock, **kwargs: Any) -> CiWaiter:
    host = Host(lambda: GitHub("acme/widgets", api_url=server.url, token=TOKEN), "origin")
    return CiWaiter(host, "t", CiConfig(poll=5, **kwargs), clock=clock, sleep=clock.sleep)


def _pending(sha: str) -> list[dict[str, Any]]:
    return [{"id": 3, "name": "tests", "status": "in_progress", "conclusion": None}]


def test_checks_still_running_when_the_budget_ends_fail_the_gate(tmp_path: Path) -> None:
    with GitHubServer(token=TOKEN, checks=_pending) as server:
        ci = _round(tmp_path, server)
        clock = Clock()
        left = dataclasses.replace(ci, seconds_left=12)
        report = _waiter(server, clock, timeout=600)(left)
    assert not report.passed
    assert report.summary == f"checks not finished in time on {ci.commit[:12]}: tests"
    assert clock.now <= 12  # budget.seconds bounds the wait, not [ci] timeout
    assert len(server.pulls) == 1


def test_no_check_run_at_all_is_nothing_tested_not_a_pass(tmp_path: Path) -> None:
    with GitHubServer(token=TOKEN, checks=lambda sha: []) as server:
        ci = _round(tmp_path, server)
        clock = Clock()
        report = _waiter(server, clock, settle=20)(ci)
    assert not report.passed
    assert "no check run appeared" in report.summary
    assert "nothing was tested" in report.summary
    assert 20 <= clock.now < 30


def test_a_named_check_that_never_shows_is_waited_for(tmp_path: Path) -> None:
    def only_lint(sha: str) -> list[dict[str, Any]]:
        return [{"id": 4, "name": "lint", "status": "completed", "conclusion": "success"}]

    with GitHubServer(token=TOKEN, checks=only_lint) as server:
        ci = _round(tmp_path, server)
        report = _waiter(server, Clock(), checks=("lint", "tests"), timeout=30)(ci)
    assert not report.passed
    assert report.summary.endswith(": tests")


def test_a_host_refusing_the_token_fails_the_round_with_the_reason(tmp_path: Path) -> None:
    with GitHubServer(token="another-token") as server:
        ci = _round(tmp_path, server)
        report = _waiter(server, Clock())(ci)
    assert not report.passed
    assert report.summary == (
        "the round could not be published: GET /repos/acme/widgets/pulls: HTTP 401: Bad credentials"
    )


def test_the_base_is_where_the_run_started_and_a_detached_start_says_so(tmp_path: Path) -> None:
    passing = [{"id": 5, "name": "tests", "status": "completed", "conclusion": "success"}]
    with GitHubServer(token=TOKEN, checks=lambda sha: passing) as server:
        ci = _round(tmp_path, server)
        clock = Clock()
        detached = _waiter(server, clock)(dataclasses.replace(ci, origin=None))
        assert server.pulls == []
        started = _waiter(server, clock)(ci)
    assert not detached.passed
    assert detached.summary == (
        "the round could not be published: no base branch: the run started on a detached HEAD; "
        "set github.base"
    )
    assert started.passed, started.summary
    (pull,) = server.pulls
    assert pull["base"]["ref"] == "main"


def test_a_failed_check_on_the_second_page_fails_the_gate_with_its_log(tmp_path: Path) -> None:
    def many(sha: str) -> list[dict[str, Any]]:
        return [{"id": n, "name": f"job-{n}", "status": "completed",
                 "conclusion": "failure" if n == 3 else "success"} for n in (1, 2, 3)]  # fmt: skip

    with GitHubServer(token=TOKEN, checks=many, max_per_page=2, logs={3: "job-3 broke"}) as server:
        report = _waiter(server, Clock())(_round(tmp_path, server))
    assert not report.passed
    assert report.failures == ["job-3"]
    assert report.summary.startswith("1 of 3 check run(s) failed")
    assert "job-3 broke" in report.output_tail
