"""The one outbound redactor and the one for what is written, tried at each door: the host's
requests, a webhook's message, the git push's token, the archive of sources, the claim ledger,
a project's `.env` (see docs/connectors.md, "What leaves the machine")."""

from __future__ import annotations

import base64
import dataclasses
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harness.connect.connectors import RunContext, WebhookConnector
from harness.connect.git_publish import push_branch, token_config
from harness.connect.github import GitHub, HostError
from harness.core.redact import Redactor, env_file_values
from harness.core.stop import StopReason
from harness.core.usage import Usage
from harness.outer.result import RunResult
from harness.research.archive import INDEX_FILE, SourceArchive
from harness.research.claim_ledger import Claim, record_claims
from harness.research.web import WebConfig, fetch_url_tool
from harness.research.web_search import WebSearchConfig, web_search_tool
from harness.spec.loop_spec import LoopSpec
from harness.tools import ToolContext
from harness.tools.mcp import McpServer, mcp_tools
from tests.conftest import git, make_repo
from tests.github_server import GitHubServer
from tests.tools.test_mcp import FLAKY_SERVER

CANARY = "outbound-canary-5e61f0a2"
REDACT = Redactor(env={"SERVICE_TOKEN": CANARY}).redact_text


def _sent(server: GitHubServer) -> str:
    return repr([r.body for r in server.requests]) + repr(server.hooks)


def test_a_pull_requests_title_and_body_pass_the_redactor() -> None:
    with GitHubServer(token="t0k3n-for-tests") as server:
        client = GitHub(server.repo, api_url=server.url, token="t0k3n-for-tests", redact=REDACT)
        client.open_pull(head="h", base="main", title=f"fix {CANARY}", body=f"saw {CANARY}",
                         draft=False)  # fmt: skip
        client.update_pull(100, title=f"again {CANARY}", body=f"```\n{CANARY}\n```")
    assert CANARY not in _sent(server)
    assert server.pulls[0]["title"] == "again [REDACTED]"


def test_a_client_made_without_a_redactor_still_redacts_the_environments_secrets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PAYMENTS_SECRET", CANARY)
    key = "sk-" + "A1b2C3d4E5f6G7h8I9j0K1l2"
    with GitHubServer(token="t0k3n-for-tests") as server:
        client = GitHub(server.repo, api_url=server.url, token="t0k3n-for-tests")
        client.comment(3, f"{CANARY} {key} postgres://app:pw-canary-991@db/x")
    sent = _sent(server)
    assert CANARY not in sent
    assert key not in sent
    assert "pw-canary-991" not in sent
    assert "postgres://app:[REDACTED]@db/x" in server.comments[3][0]


def _result(message: str) -> RunResult:
    return RunResult(StopReason.MAX_ITERATIONS, message, [], Usage(), run_id="r1")


def test_a_webhook_message_passes_the_redactor() -> None:
    with GitHubServer(token="t") as server:
        hook = WebhookConnector(lambda: f"{server.url}/hook", REDACT, on=("escalate",))
        hook.send(_result(f"the gate printed {CANARY}"), RunContext(f"goal {CANARY}", "l", Path()))
    assert len(server.hooks) == 1
    assert CANARY not in _sent(server)
    assert "[REDACTED]" in server.hooks[0]["text"]


def test_an_unreachable_webhook_names_no_secret_of_its_address(tmp_path: Path) -> None:
    secret_url = f"http://127.0.0.1:9/services/T000/B000/{CANARY}"
    hook = WebhookConnector(lambda: secret_url, REDACT, timeout=2)
    with pytest.raises(HostError, match="the webhook cannot be reached") as raised:
        hook.send(_result("x"), RunContext("g", "l", tmp_path))
    assert CANARY not in str(raised.value)


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("A=abcdefgh1\nexport B='quoted value 2'\n# C=commented-out-1\n", ["abcdefgh1", "quoted value 2"]),
        ('D="with # hash inside"\nE=plain-value-3 # a comment\nshort=abc\n', ["with # hash inside", "plain-value-3"]),
        ("not a line\n=novalue-123\nF = spaced-value-4 \n", ["spaced-value-4"]),
    ],
)  # fmt: skip
def test_a_dotenv_files_values_are_secrets_whatever_their_names(
    text: str, values: list[str]
) -> None:
    assert env_file_values(text) == values


def test_the_dotenv_of_the_loops_folder_and_of_its_workspace_are_both_read(tmp_path: Path) -> None:
    (tmp_path / "loops" / "a").mkdir(parents=True)
    (tmp_path / "loops" / "a" / "loop.toml").write_text(
        'name = "a"\ngoal = "g"\nworkspace = "../.."\n'
    )
    (tmp_path / "loops" / "a" / ".env").write_text("LOOP_SIDE=loop-dotenv-1\n")
    (tmp_path / ".env").write_text("REPO_SIDE=repo-dotenv-2\n")
    redact = LoopSpec.from_toml(tmp_path / "loops" / "a").redactor().redact_text
    assert redact("loop-dotenv-1 repo-dotenv-2 kept") == "[REDACTED] [REDACTED] kept"


def test_the_archive_keeps_no_secret_of_an_address_or_a_search_answer(tmp_path: Path) -> None:
    archive = SourceArchive(tmp_path / "sources", redact=REDACT)
    page = archive.add(
        f"https://example.org/a?q={CANARY}", b"a page", requested=f"https://example.org/a?{CANARY}"
    )
    search = archive.add(f"search:brave?q={CANARY}", f'{{"query": "{CANARY}"}}'.encode(), kind="search")  # fmt: skip
    on_disk = "".join(p.read_text() for p in (tmp_path / "sources").rglob("*") if p.is_file())
    assert CANARY not in on_disk
    assert page.url == "https://example.org/a?q=[REDACTED]"
    assert archive.body(search) == b'{"query": "[REDACTED]"}'
    assert (tmp_path / "sources" / INDEX_FILE).read_text().count("\n") == 2


def test_the_claim_ledger_keeps_no_secret(tmp_path: Path) -> None:
    ledger = tmp_path / "claims.jsonl"
    claims = {"C1": Claim(text=f"the key is {CANARY}", key=True, citations=[("s-1", CANARY)])}
    entries = record_claims(ledger, claims, redact=REDACT)
    assert CANARY not in ledger.read_text()
    assert entries[-1].claims["C1"].text == "the key is [REDACTED]"
    again = record_claims(ledger, claims, redact=REDACT)  # the same claims again: nothing moved
    assert again[-1].changed == []


class _GitHost:
    """A smart-HTTP git server (``git http-backend``) that asks for a Basic credential, or
    redirects every request to ``redirect``; it records every Authorization header it sees."""

    def __init__(self, root: Path, *, redirect: str | None = None) -> None:
        self.seen: list[str] = []
        host = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                host.seen.append(self.headers.get("Authorization") or "")
                if redirect is not None:
                    self.send_response(302)
                    self.send_header("Location", redirect + self.path)
                    self.end_headers()
                    return
                if not self.headers.get("Authorization"):
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="git"')
                    self.end_headers()
                    return
                path, _, query = self.path.partition("?")
                length = int(self.headers.get("Content-Length") or 0)
                env = {**os.environ, "GIT_PROJECT_ROOT": str(root), "GIT_HTTP_EXPORT_ALL": "1",
                       "REQUEST_METHOD": self.command, "PATH_INFO": path, "QUERY_STRING": query,
                       "CONTENT_TYPE": self.headers.get("Content-Type") or "",
                       "REMOTE_USER": "x", "REMOTE_ADDR": "127.0.0.1"}  # fmt: skip
                out = subprocess.run(["git", "http-backend"], input=self.rfile.read(length),
                                     env=env, capture_output=True, check=False).stdout  # fmt: skip
                head, _, body = out.partition(b"\r\n\r\n")
                status = 200
                headers = [line.split(": ", 1) for line in head.decode().split("\r\n") if line]
                for name, value in headers:
                    if name.lower() == "status":
                        status = int(value.split()[0])
                self.send_response(status)
                for name, value in headers:
                    if name.lower() != "status":
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _serve

            def log_message(self, *_: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]

    def __enter__(self) -> _GitHost:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *_: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def pushed(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    git(repo, "branch", "harness/run-1")
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "remote.git")], check=True)
    subprocess.run(["git", "config", "http.receivepack", "true"], cwd=tmp_path / "remote.git",
                   check=True)  # fmt: skip
    return repo


def test_the_push_token_reaches_its_own_host(tmp_path: Path, pushed: Path) -> None:
    token = "push-token-canary-31"
    with _GitHost(tmp_path) as host:
        git(pushed, "remote", "add", "origin", f"http://127.0.0.1:{host.port}/remote.git")
        push_branch(pushed, "origin", "harness/run-1", token=token)
    expected = "Basic " + base64.b64encode(f"x-access-token:{token}".encode()).decode()
    assert expected in host.seen
    assert git(tmp_path / "remote.git", "branch", "--list").strip() == "harness/run-1"


def test_the_push_token_follows_no_redirect_to_another_host(tmp_path: Path, pushed: Path) -> None:
    token = "push-token-canary-32"
    with (
        _GitHost(tmp_path) as other,
        _GitHost(tmp_path, redirect=f"http://localhost:{other.port}") as host,
    ):
        git(pushed, "remote", "add", "origin", f"http://127.0.0.1:{host.port}/remote.git")
        with pytest.raises(OSError, match="git push to origin failed") as raised:
            push_branch(pushed, "origin", "harness/run-1", token=token)
    assert token not in str(raised.value)
    assert other.seen == []  # not followed at all
    assert host.seen  # the first host answered with a redirect, unasked
    assert not any(host.seen)


def test_the_token_is_on_no_command_line_and_only_for_an_http_remote(
    tmp_path: Path, pushed: Path
) -> None:
    git(pushed, "remote", "add", "origin", "https://host.example:8443/acme/widgets.git")
    git(pushed, "remote", "add", "local", str(tmp_path / "remote.git"))
    options, env = token_config(pushed, "origin", "tok-123")
    assert "tok-123" not in " ".join(options)
    assert env == {"HARNESS_GIT_TOKEN": "tok-123"}
    assert any(o.startswith("credential.https://host.example:8443.helper=") for o in options)
    assert "http.followRedirects=false" in options
    assert token_config(pushed, "local", "tok-123") == ((), {})
    assert token_config(pushed, "origin", None) == ((), {})


def test_an_mcp_calls_arguments_pass_the_redactor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "flaky_server.py"
    script.write_text(FLAKY_SERVER)
    monkeypatch.setenv("MCP_SIDE_TOKEN", "mcp-env-canary-77")
    ctx = ToolContext(workspace=tmp_path, max_output_chars=2_000)
    server = McpServer("flaky", command=[sys.executable, str(script)], cwd=tmp_path)
    with mcp_tools([server, dataclasses.replace(server, name="given", redact=REDACT)]) as tools:
        by_name = {tool.name: tool for tool in tools}
        by_default = by_name["mcp__flaky__echo"].run({"text": "mcp-env-canary-77 "}, ctx)
        by_the_run = by_name["mcp__given__echo"].run({"text": f"{CANARY} "}, ctx)
    assert by_default.output.startswith("[REDACTED] ")  # the server echoed what it was sent
    assert by_the_run.output.startswith("[REDACTED] ")


class _Asked(BaseHTTPRequestHandler):
    """Answers every GET with a small text page (or a search answer), keeping the path asked."""

    paths: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        _Asked.paths.append(self.path)
        body = b'{"web": {"results": []}}' if "/search" in self.path else b"a page"
        kind = "application/json" if "/search" in self.path else "text/plain"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def asked() -> Iterator[str]:
    _Asked.paths = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Asked)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("archived", [True, False])
def test_an_address_fetched_and_a_query_searched_pass_the_redactor(
    asked: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, archived: bool
) -> None:
    monkeypatch.setenv("PAYMENTS_SECRET", "web-env-canary-3141")
    archive = SourceArchive(tmp_path / "sources", redact=REDACT) if archived else None
    ctx = ToolContext(workspace=tmp_path)
    limits = WebConfig(allow_domains=["127.0.0.1"], timeout=10)
    settings = WebSearchConfig(provider="brave", endpoint=f"{asked}/search")
    given = fetch_url_tool(limits, archive, redact=REDACT)
    by_default = fetch_url_tool(limits, archive)
    searched = web_search_tool(settings, env={"BRAVE_API_KEY": "k"}, archive=archive, redact=REDACT)
    assert not given.run({"url": f"{asked}/page?about={CANARY}"}, ctx).is_error
    assert not by_default.run({"url": f"{asked}/a/web-env-canary-3141"}, ctx).is_error
    assert not searched.run({"query": f"who holds {CANARY}"}, ctx).is_error
    assert _Asked.paths[:2] == ["/page?about=[REDACTED]", "/a/[REDACTED]"]
    assert _Asked.paths[2].startswith("/search?q=who+holds+%5BREDACTED%5D")
    assert CANARY not in "".join(_Asked.paths)
