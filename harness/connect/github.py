"""The subset of GitHub's REST API the connectors, ``[ci]`` and the issue trigger use.

Requests go to ``api_url`` (GitHub's, or a server speaking the same subset). The token is read
from the environment variable the configuration names, sent only in the ``Authorization``
header, and never put in an error: a failure names the request and the host's message. Every
string of a request's body passes the run's redactor (a pull request's title and body, a
comment), the one outbound redactor of everything the harness sends. A list
is read page by page, following the host's ``Link: rel="next"`` headers up to ``MAX_PAGES``,
and only to pages under ``api_url``: the token is never sent to a host a reply names.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeGuard

from pydantic import Field

from harness.core.errors import HarnessError
from harness.core.redact import Redactor, redact_strings
from harness.core.section import Section
from harness.sandbox.command_env import EnvName

MAX_RESPONSE_BYTES = 20_000_000
"""Bound on one response body (a check run's log included)."""

PER_PAGE = 100
"""Items asked for per page of a list (GitHub's largest page)."""

MAX_PAGES = 10
"""Pages of one list followed by their ``Link: <...>; rel="next"`` headers: 1,000 items."""

_LINK = re.compile(r"<([^>]*)>([^,<]*)")


REQUEST_SECONDS = 30.0
"""How long one request to the host may take, seconds, unless ``[github] timeout`` says."""


class GitHubConfig(Section):
    """``[github]``: the repository host the connectors, ``[ci]`` and the issue trigger speak to
    (GitHub's REST API, or a server speaking its subset at ``api_url``)."""

    repo: str = Field(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")  # owner/name
    api_url: str = Field("https://api.github.com", pattern=r"^https?://")
    token_env: EnvName = "GITHUB_TOKEN"  # the token is read from this variable, never a file
    remote: str = Field("origin", min_length=1)  # the git remote the run's branch is pushed to
    base: str | None = Field(None, min_length=1)  # the pull request's base (default: the run's)
    timeout: float = Field(REQUEST_SECONDS, gt=0, le=600)  # seconds for one request


class HostError(HarnessError):
    """A request to the repository host failed; the message says which and why."""


@dataclass(frozen=True)
class PullRequest:
    number: int
    url: str
    head_sha: str
    head_ref: str = ""  # the branch it is from


@dataclass(frozen=True)
class Issue:
    number: int
    title: str
    body: str
    labels: tuple[str, ...]


@dataclass(frozen=True)
class CheckRun:
    id: int
    name: str
    status: str  # queued, in_progress, completed
    conclusion: str | None  # success, failure, neutral, cancelled, skipped, timed_out, ...
    summary: str  # the run's output title, summary and text


class GitHub:
    """A client for ``repo`` (``owner/name``) at ``api_url``, authenticated by ``token``."""

    def __init__(
        self,
        repo: str,
        *,
        api_url: str,
        token: str | None,
        timeout: float = REQUEST_SECONDS,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        self.repo = repo
        self.api_url = api_url.rstrip("/")
        self._token = token
        self.timeout = timeout
        self.redact = redact or Redactor().redact_text  # None: the secrets of the environment
        self._opener = urllib.request.build_opener(_TokenStaysHome(self.api_url))

    def find_pull(self, head: str) -> PullRequest | None:
        """The open pull request from branch ``head`` of this repository, if there is one."""
        owner = self.repo.split("/")[0]
        query = urllib.parse.urlencode({"head": f"{owner}:{head}", "state": "open"})
        found = self._call("GET", f"/repos/{self.repo}/pulls?{query}")
        return _pull(found[0]) if isinstance(found, list) and found else None

    def pull(self, number: int) -> PullRequest:
        """Pull request ``number`` of this repository, as the host has it."""
        return _pull(self._call("GET", f"/repos/{self.repo}/pulls/{number}"))

    def open_pull(self, *, head: str, base: str, title: str, body: str, draft: bool) -> PullRequest:
        data = {"head": head, "base": base, "title": title, "body": body, "draft": draft}
        return _pull(self._call("POST", f"/repos/{self.repo}/pulls", data))

    def update_pull(self, number: int, *, title: str, body: str) -> PullRequest:
        data = {"title": title, "body": body}
        return _pull(self._call("PATCH", f"/repos/{self.repo}/pulls/{number}", data))

    def comment(self, issue: int, body: str) -> str:
        """Post ``body`` on issue (or pull request) ``issue``; the comment's URL."""
        made = self._call("POST", f"/repos/{self.repo}/issues/{issue}/comments", {"body": body})
        return str(made.get("html_url") or made.get("url") or "") if isinstance(made, dict) else ""

    def labelled_issues(self, label: str) -> list[Issue]:
        """Open issues carrying ``label`` (pull requests, which the API lists too, left out)."""
        query = urllib.parse.urlencode({"labels": label, "state": "open", "per_page": PER_PAGE})
        return [
            issue_of(item)
            for item in self._items(f"/repos/{self.repo}/issues?{query}")
            if "pull_request" not in item and is_issue_number(item.get("number"))
        ]

    def review_items(self, number: int) -> list[tuple[str, dict[str, Any]]]:
        """The reviews, inline comments and comments on pull request ``number`` (each list's
        first ``MAX_PAGES`` pages), each with the webhook event that carries its kind."""
        lists = (("pull_request_review", f"pulls/{number}/reviews"),
                 ("pull_request_review_comment", f"pulls/{number}/comments"),
                 ("issue_comment", f"issues/{number}/comments"))  # fmt: skip
        return [
            (event, item)
            for event, path in lists
            for item in self._items(f"/repos/{self.repo}/{path}?per_page={PER_PAGE}")
        ]

    def review_comments(self, number: int, review: int) -> list[dict[str, Any]]:
        """The inline comments of review ``review`` of pull request ``number``."""
        path = f"/repos/{self.repo}/pulls/{number}/reviews/{review}/comments?per_page={PER_PAGE}"
        return list(self._items(path))

    def check_runs(self, sha: str) -> list[CheckRun]:
        """Every check run on commit ``sha``; more than ``MAX_PAGES`` pages of them is an error
        (a check not read could be a failed one)."""
        path = f"/repos/{self.repo}/commits/{sha}/check-runs?per_page={PER_PAGE}"
        return [
            _check_run(run)
            for page in self._pages(path, whole=True)
            for run in (page.get("check_runs") or [] if isinstance(page, dict) else [])
            if isinstance(run, dict)
        ]

    def job_log(self, job: int) -> str | None:
        """The log of the Actions job behind check run ``job``; None when the host has none."""
        try:  # a raw reply is always text
            return str(self._call("GET", f"/repos/{self.repo}/actions/jobs/{job}/logs", raw=True))
        except HostError:
            return None

    def _items(self, path: str) -> Iterator[dict[str, Any]]:
        """The objects of the list at ``path``, from its first ``MAX_PAGES`` pages."""
        for page in self._pages(path, whole=False):
            if isinstance(page, list):
                yield from (item for item in page if isinstance(item, dict))

    def _pages(self, path: str, *, whole: bool) -> Iterator[Any]:
        """The pages of the list at ``path``, the first and those its ``Link`` headers lead to.

        Past ``MAX_PAGES`` the rest is left unread, or, when the list must be ``whole``, that
        is an error."""
        where, url = f"GET {path.split('?')[0]}", self.api_url + path
        for _ in range(MAX_PAGES):
            payload, link = self._send("GET", url, where)
            yield payload
            following = next_page(link)
            if following is None:
                return
            if not following.startswith(self.api_url + "/"):
                raise HostError(f"{where}: the next page is not under {self.api_url}: not followed")
            url = following
        if whole:
            raise HostError(f"{where}: more than {MAX_PAGES} pages of {PER_PAGE}: not all read")

    def _call(self, method: str, path: str, data: object = None, *, raw: bool = False) -> Any:
        where = f"{method} {path.split('?')[0]}"
        return self._send(method, self.api_url + path, where, data, raw=raw)[0]

    def _send(self, method: str, url: str, where: str, data: object = None, *,
              raw: bool = False) -> tuple[Any, str]:  # fmt: skip
        """The reply to ``method url`` (JSON, or text when ``raw``) and its ``Link`` header;
        a failure is a :class:`HostError` starting with ``where``."""
        body = json.dumps(redact_strings(data, self.redact)).encode() if data is not None else None
        request = urllib.request.Request(url, data=body, method=method)
        request.add_header("Accept", "application/vnd.github+json")
        request.add_header("X-GitHub-Api-Version", "2022-11-28")
        if body is not None:
            request.add_header("Content-Type", "application/json")
        if self._token:
            request.add_header("Authorization", f"Bearer {self._token}")
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                payload = response.read(MAX_RESPONSE_BYTES).decode("utf-8", errors="replace")
                link = response.headers.get("Link") or ""
        except urllib.error.HTTPError as exc:
            raise HostError(f"{where}: HTTP {exc.code}: {_message(exc)}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise HostError(f"{where}: {self.api_url} cannot be reached: {reason}") from None
        if raw:
            return payload, link
        try:
            return (json.loads(payload) if payload.strip() else None), link
        except json.JSONDecodeError:
            raise HostError(f"{where}: the reply is not JSON") from None


def next_page(link: str) -> str | None:
    """The ``rel="next"`` address in a ``Link`` header, if it names one."""
    for url, params in _LINK.findall(link):
        rels = re.findall(r'rel\s*=\s*"?([^";]*)"?', params)
        if any("next" in rel.split() for rel in rels):
            return url
    return None


class _TokenStaysHome(urllib.request.HTTPRedirectHandler):
    """Follows redirects, carrying the ``Authorization`` header only to addresses under
    ``home``: GitHub sends a job's log from a storage host, which must not get the token."""

    def __init__(self, home: str) -> None:
        self.home = home

    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str,
                         headers: Any, newurl: str) -> urllib.request.Request | None:  # fmt: skip
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and not newurl.startswith(self.home + "/"):
            new.remove_header("Authorization")
        return new


def env_value(name: str, field: str) -> str:
    """The secret in environment variable ``name`` (configured by ``field``); unset is an error."""
    value = os.environ.get(name, "")
    if not value.strip():
        raise HostError(f"the environment variable {name} ({field}) is not set")
    return value


MAX_ISSUE_NUMBER = 2**31 - 1
"""The largest issue number taken from a reply or a delivery (GitHub's are 32-bit)."""


def is_issue_number(value: object) -> TypeGuard[int]:
    """Whether ``value`` is an issue number: a JSON integer from 1 to ``MAX_ISSUE_NUMBER``
    (not a string, a boolean or a fraction)."""
    return type(value) is int and 0 < value <= MAX_ISSUE_NUMBER


def issue_of(data: dict[str, Any]) -> Issue:
    """An issue from the API's (or a webhook delivery's) JSON; a :class:`HostError` when its
    number is not an issue number (:func:`is_issue_number`)."""
    number = data.get("number")
    if not is_issue_number(number):
        raise HostError(
            f"the issue's number {str(number)[:40]!r} is not an integer from 1 to "
            f"{MAX_ISSUE_NUMBER}"
        )
    given = data.get("labels")
    labels = tuple(
        str(label.get("name") if isinstance(label, dict) else label)
        for label in (given if isinstance(given, list) else [])
    )
    return Issue(number, _text(data.get("title")), _text(data.get("body")), labels)


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _pull(data: Any) -> PullRequest:
    if not isinstance(data, dict) or "number" not in data:
        raise HostError("the host's reply holds no pull request")
    head = data.get("head") or {}
    return PullRequest(int(data["number"]), str(data.get("html_url") or data.get("url") or ""),
                       str(head.get("sha") or ""), str(head.get("ref") or ""))  # fmt: skip


def _check_run(data: dict[str, Any]) -> CheckRun:
    output = data.get("output") or {}
    parts = [output.get(key) for key in ("title", "summary", "text")]
    return CheckRun(
        int(data.get("id") or 0),
        str(data.get("name") or "?"),
        str(data.get("status") or "queued"),
        data.get("conclusion"),
        "\n".join(str(part) for part in parts if part),
    )


def _message(exc: urllib.error.HTTPError) -> str:
    """The host's ``message`` from an error reply, bounded."""
    try:
        text = exc.read(10_000).decode("utf-8", errors="replace")
        data = json.loads(text)
        return str(data.get("message", text))[:300] if isinstance(data, dict) else text[:300]
    except (OSError, json.JSONDecodeError):
        return exc.reason if isinstance(exc.reason, str) else "no message"
