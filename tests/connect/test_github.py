"""The host's lists are read page by page, as far as their `Link: rel="next"` headers go, up to
a stated cap, and only under the configured `api_url`."""

from __future__ import annotations

from typing import Any

import pytest

from harness.connect.github import MAX_PAGES, GitHub, HostError, next_page
from tests.github_server import GitHubServer

TOKEN = "pagecanary-token-77"


def _client(server: GitHubServer) -> GitHub:
    return GitHub(server.repo, api_url=server.url, token=TOKEN)


def _runs(count: int, failing: int) -> Any:
    def policy(sha: str) -> list[dict[str, Any]]:
        return [{"id": n, "name": f"check-{n}", "status": "completed",
                 "conclusion": "failure" if n == failing else "success"}
                for n in range(1, count + 1)]  # fmt: skip

    return policy


def test_a_labelled_issue_on_the_second_page_is_seen() -> None:
    with GitHubServer(token=TOKEN, max_per_page=2) as server:
        for number in range(1, 6):
            server.add_issue(number, f"issue {number}", "", ["harness"])
        server.add_issue(6, "not for us", "", ["question"])
        found = _client(server).labelled_issues("harness")
        asked = [r.path for r in server.requests]
    assert [issue.number for issue in found] == [1, 2, 3, 4, 5]
    assert len(asked) == 3
    assert "page=2" in asked[1]
    assert "page=3" in asked[2]


def test_a_failed_check_run_on_the_second_page_is_seen() -> None:
    with GitHubServer(token=TOKEN, max_per_page=2, checks=_runs(3, failing=3)) as server:
        runs = _client(server).check_runs("abc123")
    assert [(run.name, run.conclusion) for run in runs] == [
        ("check-1", "success"),
        ("check-2", "success"),
        ("check-3", "failure"),
    ]


def test_issues_are_read_up_to_the_cap_and_check_runs_past_it_are_an_error() -> None:
    with GitHubServer(token=TOKEN, max_per_page=1, checks=_runs(MAX_PAGES + 1, 0)) as server:
        for number in range(1, MAX_PAGES + 3):
            server.add_issue(number, f"issue {number}", "", ["harness"])
        found = _client(server).labelled_issues("harness")
        asked = len(server.requests)
        with pytest.raises(HostError, match=rf"check-runs: more than {MAX_PAGES} pages of 100"):
            _client(server).check_runs("abc123")
    assert [issue.number for issue in found] == list(range(1, MAX_PAGES + 1))
    assert asked == MAX_PAGES
    with GitHubServer(token=TOKEN, max_per_page=1, checks=_runs(MAX_PAGES, 0)) as server:
        assert len(_client(server).check_runs("abc123")) == MAX_PAGES  # exactly the cap: whole


def test_a_next_page_on_another_host_is_not_asked_and_gets_no_token() -> None:
    with (
        GitHubServer(token=TOKEN) as elsewhere,
        GitHubServer(
            token=TOKEN, max_per_page=1, link_base=elsewhere.url, checks=_runs(2, 0)
        ) as server,
    ):
        server.add_issue(1, "one", "", ["harness"])
        server.add_issue(2, "two", "", ["harness"])
        for read in (lambda c: c.labelled_issues("harness"), lambda c: c.check_runs("abc")):
            with pytest.raises(HostError, match=f"the next page is not under {server.url}"):
                read(_client(server))
    assert elsewhere.requests == []


@pytest.mark.parametrize(
    ("link", "expected"),
    [
        ("", None),
        (
            '<https://h/x?page=1>; rel="prev", <https://h/x?page=3>; rel="next"',
            "https://h/x?page=3",
        ),
        ('<https://h/x?page=3>; rel="last"', None),
        ("<https://h/x?page=2>; rel=next", "https://h/x?page=2"),
        ('<https://h/x?page=2>; rel="next last"', "https://h/x?page=2"),
        ('<https://h/x?page=2>; rel="nextish"', None),
    ],
)
def test_the_next_page_is_read_from_the_link_header(link: str, expected: str | None) -> None:
    assert next_page(link) == expected


def test_a_log_redirected_to_another_host_is_fetched_without_the_token() -> None:
    with (
        GitHubServer(token=TOKEN, logs={7: "FAILED test_x - boom"}) as storage,
        GitHubServer(token=TOKEN, logs_at=storage.url) as server,
    ):
        log = _client(server).job_log(7)
        (asked,) = storage.requests
    assert log == "FAILED test_x - boom"
    assert asked.path == "/logs/7"
    assert not asked.authorised  # GitHub's token is for GitHub, not for where it redirects


def test_a_redirect_on_the_host_itself_keeps_the_token() -> None:
    with GitHubServer(token=TOKEN, logs={7: "log"}) as server:
        server.logs_at = server.url
        assert _client(server).job_log(7) == "log"
        asked = server.requests[-1]
    assert (asked.path, asked.authorised) == ("/logs/7", True)
