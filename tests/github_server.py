"""A tiny server on 127.0.0.1 speaking the subset of GitHub's REST API the harness uses.

Issues, pull requests (their head read from a real bare repository, the "remote"), issue
comments, check runs on a commit (decided per commit by the test) and job logs; plus ``POST
/hook``, a Slack-style incoming webhook that records what it is sent. Every ``/repos`` request
must carry ``Authorization: Bearer <token>`` (else 401); every request is recorded. Lists come
in pages as GitHub's do: ``per_page`` items (30 unless asked, at most ``max_per_page``) of
``page``, with a ``Link`` header naming the next page (under ``link_base``, by default this
server). With ``logs_at``, a job's log is a redirect to ``GET {logs_at}/logs/{id}`` (as
GitHub sends it to a storage host), which any server answers from its ``logs`` unauthenticated.
A deadline timer stops the server even if a test forgets to.
"""

from __future__ import annotations

import json
import subprocess
import threading
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from harness.connect.triggers import WebhookTrigger, signature
from tests.conftest import git

CheckPolicy = Callable[[str], list[dict[str, Any]]]
"""The check runs the host reports on a commit (its sha given)."""


def passing(sha: str) -> list[dict[str, Any]]:
    return [{"id": 1, "name": "tests", "status": "completed", "conclusion": "success",
             "output": {"title": "ok", "summary": "all green"}}]  # fmt: skip


@dataclass
class Recorded:
    method: str
    path: str
    authorised: bool
    body: Any = None


@dataclass
class GitHubServer:
    token: str
    repo: str = "acme/widgets"
    remote: Path | None = None  # a bare repository: pull request heads are read from it
    deadline: float = 60.0
    checks: CheckPolicy = passing
    logs: dict[int, str] = field(default_factory=dict)
    issues: dict[int, dict[str, Any]] = field(default_factory=dict)
    pulls: list[dict[str, Any]] = field(default_factory=list)
    comments: dict[int, list[str]] = field(default_factory=dict)
    hooks: list[Any] = field(default_factory=list)
    listed: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # by path: a list
    requests: list[Recorded] = field(default_factory=list)
    max_per_page: int = 100
    link_base: str | None = None
    logs_at: str | None = None

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._timer = threading.Timer(self.deadline, self.stop)
        self._timer.daemon = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def add_issue(self, number: int, title: str, body: str, labels: list[str]) -> None:
        self.issues[number] = {"number": number, "title": title, "body": body, "state": "open",
                               "labels": [{"name": n} for n in labels]}  # fmt: skip

    def start(self) -> GitHubServer:
        self._thread.start()
        self._timer.start()
        return self

    def stop(self) -> None:
        self._timer.cancel()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> GitHubServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def head_of(self, branch: str) -> str:
        if self.remote is None:
            return ""
        found = subprocess.run(["git", "rev-parse", f"refs/heads/{branch}"], cwd=self.remote,
                               capture_output=True, text=True, check=False)  # fmt: skip
        return found.stdout.strip()

    def answer(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        parsed = urllib.parse.urlparse(path)
        query = dict(urllib.parse.parse_qsl(parsed.query))
        prefix = f"/repos/{self.repo}"
        route = parsed.path.removeprefix(prefix)
        with self._lock:
            if method == "GET" and route in self.listed:
                return 200, self.listed[route]
            if method == "GET" and route == "/pulls":
                head = query.get("head", "").split(":")[-1]
                return 200, [self._pull(p) for p in self.pulls
                             if p["head"]["ref"] == head and p["state"] == "open"]  # fmt: skip
            if method == "POST" and route == "/pulls":
                if any(p["head"]["ref"] == body["head"] for p in self.pulls):
                    return 422, {"message": "A pull request already exists"}
                pull = {"number": 100 + len(self.pulls), "state": "open", "title": body["title"],
                        "body": body["body"], "draft": body.get("draft", False),
                        "head": {"ref": body["head"]}, "base": {"ref": body["base"]},
                        "updates": 0}  # fmt: skip
                self.pulls.append(pull)
                return 201, self._pull(pull)
            parts = route.strip("/").split("/")
            if method == "GET" and parts[0] == "pulls" and len(parts) == 2:
                found = [p for p in self.pulls if str(p["number"]) == parts[1]]
                return (200, self._pull(found[0])) if found else (404, {"message": "Not Found"})
            if method == "PATCH" and parts[0] == "pulls":
                pull = next(p for p in self.pulls if p["number"] == int(parts[1]))
                pull.update(title=body["title"], body=body["body"])
                pull["updates"] += 1
                return 200, self._pull(pull)
            if method == "POST" and parts[0] == "issues" and parts[2:] == ["comments"]:
                self.comments.setdefault(int(parts[1]), []).append(body["body"])
                return 201, {"html_url": f"{self.url}/{self.repo}/issues/{parts[1]}#c"}
            if method == "GET" and route == "/issues":
                label = query.get("labels")
                return 200, [i for i in self.issues.values()
                             if any(x["name"] == label for x in i["labels"])]  # fmt: skip
            if method == "GET" and parts[0] == "commits" and parts[2:] == ["check-runs"]:
                runs = self.checks(parts[1])
                return 200, {"total_count": len(runs), "check_runs": runs}
            if method == "GET" and parts[:2] == ["actions", "jobs"] and parts[3:] == ["logs"]:
                if self.logs_at is not None:
                    return 302, {"Location": f"{self.logs_at}/logs/{parts[2]}"}
                log = self.logs.get(int(parts[2]))
                return (200, log) if log is not None else (404, {"message": "Not Found"})
        return 404, {"message": "Not Found"}

    def page(self, path: str, payload: Any) -> tuple[Any, str]:
        """One page of a list reply (a list, or check runs) and its ``Link`` header."""
        runs = payload.get("check_runs") if isinstance(payload, dict) else None
        items = payload if isinstance(payload, list) else runs
        if not isinstance(items, list):
            return payload, ""
        parsed = urllib.parse.urlparse(path)
        query = dict(urllib.parse.parse_qsl(parsed.query))
        size = min(int(query.get("per_page", 30)), self.max_per_page)
        number = int(query.get("page", 1))
        chunk = items[(number - 1) * size : number * size]
        at = lambda n: (f"<{self.link_base or self.url}{parsed.path}?"  # noqa: E731
                        f"{urllib.parse.urlencode({**query, 'page': n})}>")  # fmt: skip
        links = [f'{at(number - 1)}; rel="prev"'] if number > 1 else []
        if number * size < len(items):
            last = -(-len(items) // size)
            links += [f'{at(number + 1)}; rel="next"', f'{at(last)}; rel="last"']
        return (chunk if runs is None else {**payload, "check_runs": chunk}), ", ".join(links)

    def _pull(self, pull: dict[str, Any]) -> dict[str, Any]:
        head = {**pull["head"], "sha": self.head_of(pull["head"]["ref"])}
        return {**{k: v for k, v in pull.items() if k != "updates"}, "head": head,
                "html_url": f"{self.url}/{self.repo}/pull/{pull['number']}"}  # fmt: skip


def _handler(server: GitHubServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else None
            authorised = self.headers.get("Authorization") == f"Bearer {server.token}"
            server.requests.append(Recorded(method, self.path, authorised, body))
            if self.path == "/hook" and method == "POST":
                server.hooks.append(body)
                return self._send(200, "ok")
            if self.path.startswith("/logs/") and method == "GET":
                log = server.logs.get(int(self.path.removeprefix("/logs/")))
                return self._send(200, log) if log is not None else self._send(404, "no log")
            if not authorised:
                return self._send(401, {"message": "Bad credentials"})
            status, payload = server.answer(method, self.path, body)
            if status == 302:
                return self._send(status, "", {"Location": payload["Location"]})
            link = ""
            if method == "GET" and status == 200:
                payload, link = server.page(self.path, payload)
            return self._send(status, payload, {"Link": link} if link else {})

        def do_GET(self) -> None:  # noqa: N802
            self._serve("GET")

        def do_POST(self) -> None:  # noqa: N802
            self._serve("POST")

        def do_PATCH(self) -> None:  # noqa: N802
            self._serve("PATCH")

        def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            return None

    return Handler


def publish(project: Path, server: GitHubServer, loop_toml: str) -> Path:
    """``project`` (a repository) with ``loop_toml`` committed and pushed as ``main`` to the
    server's remote, which is its ``origin``."""
    (project / "loop.toml").write_text(loop_toml)
    (project / ".gitignore").write_text(".harness/\nprogress/\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "loop")
    assert server.remote is not None
    git(project, "remote", "add", "origin", str(server.remote))
    git(project, "push", "-q", "origin", "main")
    return project


def deliver(
    trigger: WebhookTrigger, event: str, payload: dict[str, Any], delivery: str, secret: str
) -> tuple[int, bytes]:
    """POST ``payload`` to the trigger as GitHub signs a delivery: its status and body."""
    body = json.dumps(payload).encode()
    host, port = trigger.address
    request = urllib.request.Request(f"http://{host}:{port}/", data=body, method="POST", headers={
        "X-GitHub-Event": event, "X-GitHub-Delivery": delivery,
        "X-Hub-Signature-256": signature(secret.encode(), body)})  # fmt: skip
    with urllib.request.urlopen(request, timeout=10) as response:
        return int(response.status), response.read()
