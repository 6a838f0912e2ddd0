"""What starts a loop under ``harness watch``: a cron schedule, labelled issues on the
repository host, and signed webhook deliveries (issues, pushed branches, goals, reviews of the
loop's pull requests).

Each trigger is polled with the time (an injectable clock) and returns the starts it has: a
:class:`Start` carries the loop's input (an issue's title and body as the goal).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import queue
import re
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from fnmatch import fnmatchcase
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from harness.connect.deliveries import SeenDeliveries
from harness.connect.github import GitHub, HostError, Issue, issue_of
from harness.connect.reviews import REVIEW_EVENTS, Review, review_of
from harness.outer.rules import Earlier
from harness.workspace.git import BRANCH_PREFIX

MAX_DELIVERY_BYTES = 1_000_000
"""Bound on a webhook delivery's body; a larger one is refused unread."""

DELIVERY_ID = re.compile(r"[A-Za-z0-9._:-]{1,200}")
"""The shape of an ``X-GitHub-Delivery`` id the endpoint accepts (GitHub's are GUIDs)."""

BRANCH = re.compile(r"(?!-)(?!.*\.\.)(?!.*//)[A-Za-z0-9._/-]{1,200}(?<![./])")
"""A pushed branch the watcher fetches: plain characters only (no refspec, option or ``..``)."""

COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")

READ_TIMEOUT = 10.0
"""Seconds a webhook connection may stay silent (headers or body) before it is dropped."""

IN_ALL = 3
"""A webhook connection is served for at most this many times its read timeout in all: a
sender dripping a byte at a time, never silent for long, is cut off too."""

MAX_CONNECTIONS = 32
"""Webhook connections served at once; one more is answered 503 and closed."""

MAX_SLUG = 120
"""The longest branch slug (:func:`branch_slug`) a pushed branch may make."""

_PLAIN = re.compile(r"[A-Za-z0-9.-]")


def branch_slug(branch: str) -> str:
    """``branch`` spelt in the characters of a loop's name, one to one: letters, digits, ``.``
    and ``-`` stay, any other character (``/``, ``_``) becomes ``_`` and its two hex digits, so
    ``feature/a-b`` (``feature_2fa-b``) and ``feature/a/b`` (``feature_2fa_2fb``) never meet."""
    return "".join(c if _PLAIN.fullmatch(c) else f"_{ord(c):02x}" for c in branch)


@dataclass(frozen=True)
class Start:
    """One start of the loop: what fired, and its input."""

    trigger: str  # schedule, issues, webhook
    goal: str | None = None  # None: the loop's own goal
    issue: int | None = None
    branch: str | None = None  # a pushed branch the loop works on
    commit: str | None = None  # the branch's head as pushed
    fresh: bool = False  # start the loop over (not carrying what it learned): the trigger's word
    review: Review | None = None  # a review of a pull request: the next round's feedback
    ignored: str = ""  # a delivery taken but starting nothing: why (the watcher logs it)

    @property
    def earlier(self) -> Earlier:
        """What its run does with the loop's earlier run (:data:`Earlier`)."""
        if self.review is not None:
            return "reopen"
        if self.issue is not None:
            return "resume"
        return "restart" if self.fresh else "carry"


class Trigger(Protocol):
    @property
    def kind(self) -> str: ...

    def poll(self, now: datetime) -> list[Start]:
        """The starts due at ``now``."""
        ...


def issue_goal(issue: Issue) -> str:
    """The goal of a loop started from ``issue``: its title and body."""
    body = issue.body.strip()
    return f"{issue.title.strip()}\n\n{body}\n\n(issue #{issue.number})" if body else (
        f"{issue.title.strip()} (issue #{issue.number})"
    )  # fmt: skip


class ScheduleTrigger:
    """Fires at the times of a five-field cron schedule; firings missed between two polls
    collapse into one start."""

    kind = "schedule"

    def __init__(self, cron: str, *, now: datetime, fresh: bool = False) -> None:
        from croniter import croniter

        self.fresh = fresh
        self._times = croniter(cron, now)
        self.next_firing: datetime = self._times.get_next(datetime)
        """When the schedule fires next (after the last poll)."""

    def poll(self, now: datetime) -> list[Start]:
        due = False
        while self.next_firing <= now:
            due, self.next_firing = True, self._times.get_next(datetime)
        return [Start(self.kind, fresh=self.fresh)] if due else []


class IssuesTrigger:
    """Open issues carrying ``label``, looked for every ``every`` seconds; each issue starts
    once per watcher (its loop, ``NAME-issue-N``, resumes if the watcher starts again)."""

    kind = "issues"

    def __init__(self, client: Callable[[], GitHub], label: str, *, every: float) -> None:
        self._client = client
        self.label = label
        self.every = every
        self._seen: set[int] = set()
        self._last: datetime | None = None

    def poll(self, now: datetime) -> list[Start]:
        if self._last is not None and (now - self._last).total_seconds() < self.every:
            return []
        self._last = now
        fresh = [
            i for i in self._client().labelled_issues(self.label) if i.number not in self._seen
        ]
        self._seen.update(issue.number for issue in fresh)
        fresh.sort(key=lambda issue: issue.number)
        return [Start(self.kind, issue_goal(issue), issue.number) for issue in fresh]


def signature(secret: bytes, body: bytes) -> str:
    """GitHub's ``X-Hub-Signature-256`` of ``body``: ``sha256=`` and the HMAC's hex digest."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


class WebhookTrigger:
    """A small HTTP endpoint (``POST /``) whose deliveries must carry the HMAC-SHA256
    signature of their body (``X-Hub-Signature-256``) under the shared secret.

    A GitHub ``issues`` delivery (opened or labelled) for an issue carrying ``label`` starts a
    loop with the issue as its goal; a ``push`` to a branch matching one of ``branches`` (glob
    patterns) starts one on the pushed commit; any other signed JSON object with a ``goal``
    string starts one with that goal (a blank goal, or one of another type, is refused: 400);
    a review or a comment on a pull request (:mod:`harness.connect.reviews`) from one of
    ``reviewers`` is a start with that review; ``ping`` is answered. A missing or wrong signature is
    refused (401), and so is a signed delivery taken before (409): its ``X-GitHub-Delivery`` id
    or its body is in ``seen``.
    """

    kind = "webhook"

    def __init__(self, secret: bytes, *, seen: SeenDeliveries, host: str = "127.0.0.1",
                 port: int = 0, label: str = "harness", branches: Sequence[str] = (),
                 timeout: float = READ_TIMEOUT, max_connections: int = MAX_CONNECTIONS,
                 fresh: bool = False, reviewers: Sequence[str] = (),
                 handle: str = "@harness") -> None:  # fmt: skip
        self.secret = secret
        self.reviewers = tuple(reviewers)
        self.handle = handle
        self.fresh = fresh
        self.seen = seen
        self.label = label
        self.branches = tuple(branches)
        self._starts: queue.Queue[Start] = queue.Queue()
        self.server = _BoundedServer((host, port), _handler(self, timeout), max_connections,
                                     lifetime=IN_ALL * timeout)  # fmt: skip
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True,
                                        kwargs={"poll_interval": 0.1},  # close() waits at most this
                                        name="harness-webhook")  # fmt: skip
        self._thread.start()

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.server.server_address[:2]
        return str(host), int(port)

    def poll(self, now: datetime) -> list[Start]:
        starts = []
        while not self._starts.empty():
            starts.append(self._starts.get_nowait())
        return starts

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def accept(self, event: str, body: bytes) -> tuple[int, str]:
        """A signed delivery: the HTTP status and a word on what was done."""
        if event == "ping":
            return 200, "pong"
        try:
            data: Any = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return 400, "the body is not JSON"
        if not isinstance(data, dict):
            return 400, "the body is not a JSON object"
        if event == "push":
            return self._push(data)
        if event in REVIEW_EVENTS:
            review = review_of(event, data, reviewers=self.reviewers, handle=self.handle)
            if isinstance(review, str):
                self._starts.put(Start(self.kind, ignored=f"{event}: {review}"))
                return 202, f"ignored: {review}"
            self._starts.put(Start(self.kind, review=review))
            return 202, f"taken: a review of pull request #{review.pull} by @{review.author}"
        if event == "issues":
            issue = data.get("issue")
            opened = data.get("action") in ("opened", "labeled", "reopened")
            if not opened or not isinstance(issue, dict):
                return 202, "ignored: not an opened or labelled issue"
            try:
                found = issue_of(issue)
            except HostError as exc:
                return 400, str(exc)
            if self.label not in found.labels:
                return 202, f"ignored: the issue is not labelled {self.label!r}"
            self._starts.put(Start(self.kind, issue_goal(found), found.number))
            return 202, f"starting for issue #{found.number}"
        if "goal" not in data:
            return 202, "ignored: no goal and not an issue event"
        goal = data["goal"]
        if not isinstance(goal, str) or not goal.strip():
            return 400, "the field 'goal' is not a non-blank string"
        self._starts.put(Start(self.kind, goal.strip(), fresh=self.fresh))
        return 202, "starting"

    def _push(self, data: dict[str, Any]) -> tuple[int, str]:
        """A ``push`` delivery: a start on the pushed commit of a branch ``branches`` match."""
        ref, after = data.get("ref"), data.get("after")
        if not isinstance(ref, str) or not ref.startswith("refs/heads/"):
            return 202, "ignored: not a push to a branch"
        branch = ref.removeprefix("refs/heads/")
        if data.get("deleted") or not isinstance(after, str) or not COMMIT.fullmatch(after):
            return 202, f"ignored: {branch!r} was deleted or names no commit"
        if not any(fnmatchcase(branch, pattern) for pattern in self.branches):
            return 202, f"ignored: the branch {branch!r} matches none of the watched branches"
        if branch.startswith(BRANCH_PREFIX):
            return 202, f"ignored: {branch!r} is a run's own branch"
        if not BRANCH.fullmatch(branch):
            return 400, "the branch's name has characters the watcher does not fetch"
        if len(branch_slug(branch)) > MAX_SLUG:
            return 400, f"the branch's name is longer than a loop's name may hold ({MAX_SLUG})"
        self._starts.put(Start(self.kind, branch=branch, commit=after, fresh=self.fresh))
        return 202, f"starting on {branch} at {after[:12]}"


class _Deadlined(socket.socket):
    """A connection whose every read ends by its ``deadline`` (a :class:`TimeoutError` past it)."""

    deadline = 0.0

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the connection's time is up")
        timeout = self.gettimeout()
        self.settimeout(left if timeout is None else min(timeout, left))
        try:
            return super().recv_into(buffer, nbytes, flags)
        finally:
            self.settimeout(timeout)


class _BoundedServer(ThreadingHTTPServer):
    """A threaded HTTP server serving at most ``slots`` connections at once, each for at most
    ``lifetime`` seconds: one more is answered 503 and closed at once, so idle or dripping
    connections cannot pile up threads or hold the places."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler],
                 slots: int, *, lifetime: float) -> None:  # fmt: skip
        super().__init__(address, handler)
        self._slots = threading.BoundedSemaphore(slots)
        self._lifetime = lifetime

    def get_request(self) -> tuple[socket.socket, Any]:
        request, address = super().get_request()
        timed = _Deadlined(request.family, request.type, request.proto, fileno=request.detach())
        timed.deadline = time.monotonic() + self._lifetime
        return timed, address

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            with contextlib.suppress(OSError):
                request.settimeout(1)
                request.sendall(BUSY)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection the sender dropped or let go silent is no error of the watcher's."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


BUSY = b"HTTP/1.0 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


def _handler(trigger: WebhookTrigger, timeout: float) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def setup(self) -> None:
            super().setup()
            self.connection.settimeout(timeout)  # each read, request line and headers included

        def do_POST(self) -> None:  # noqa: N802 - the http.server name
            given = self.headers.get("Content-Length") or "0"
            if not given.isdigit():  # a negative length would read until the sender stops
                return self._answer(400, f"bad Content-Length: {given[:20]!r}")
            length = int(given)
            if length > MAX_DELIVERY_BYTES:
                return self._answer(413, "too large")
            try:
                body = self.rfile.read(length)
            except TimeoutError:
                return self._answer(408, f"the body did not arrive within {timeout:g} seconds")
            if len(body) < length:
                return self._answer(400, "the body ended before its Content-Length")
            given = self.headers.get("X-Hub-Signature-256") or ""
            if not hmac.compare_digest(given.encode(), signature(trigger.secret, body).encode()):
                return self._answer(401, "bad signature")
            delivery = self.headers.get("X-GitHub-Delivery")
            if delivery is not None and not DELIVERY_ID.fullmatch(delivery):
                return self._answer(400, "bad X-GitHub-Delivery id")
            if not trigger.seen.take(delivery, body):
                return self._answer(409, "replayed: this delivery was taken before")
            try:
                status, text = trigger.accept(self.headers.get("X-GitHub-Event") or "", body)
            except Exception as exc:  # noqa: BLE001 - every delivery gets its answer
                status, text = 500, f"not taken: {type(exc).__name__}"
            return self._answer(status, text)

        def _answer(self, status: int, text: str) -> None:
            payload = json.dumps({"status": text}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            return None  # quiet: the watcher reports what it starts

    return Handler
