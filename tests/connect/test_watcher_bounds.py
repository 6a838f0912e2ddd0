"""The watcher's bounds against what reaches it from outside: connections that never finish,
too many of them, many issues at once, issue numbers of the wrong shape, branch names that would
share a loop. Every delivery is data: it gets an answer and never an unbounded share of the
machine."""

from __future__ import annotations

import io
import itertools
import json
import re
import socket
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from harness.cli.watch import MAX_QUEUED, Watcher
from harness.connect.deliveries import SeenDeliveries
from harness.connect.github import GitHub
from harness.connect.triggers import (
    IN_ALL,
    MAX_SLUG,
    IssuesTrigger,
    Start,
    WebhookTrigger,
    branch_slug,
    signature,
)
from harness.core.errors import ConfigError
from harness.memory.lock import LoopLock
from harness.outer.loop_name import LOOP_NAME_PATTERN
from harness.spec import LoopSpec
from harness.tools import tool
from tests.connect.test_triggers import _spec
from tests.github_server import GitHubServer

HARNESS = str(Path(sys.executable).with_name("harness"))
"""The installed command, beside the Python running the tests (found without PATH)."""

T0 = datetime(2026, 1, 1, 6, 0, 30, tzinfo=UTC)
SECRET = b"bounds-secret"


def _hook(tmp_path: Path, **bounds: float) -> WebhookTrigger:
    seen = SeenDeliveries(tmp_path / "seen")
    return WebhookTrigger(SECRET, seen=seen, port=0, branches=["*"], **bounds)  # type: ignore[arg-type]


def _raw(address: tuple[str, int], data: bytes, *, wait: float = 10) -> bytes:
    """Send ``data`` as it is and read the whole answer (b"" when the server just closed)."""
    with socket.create_connection(address, timeout=wait) as client:
        client.sendall(data)
        chunks = []
        while chunk := client.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks)


def _signed(address: tuple[str, int], payload: object, event: str = "issues") -> tuple[int, dict]:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    head = (f"POST / HTTP/1.1\r\nHost: x\r\nX-GitHub-Event: {event}\r\n"
            f"X-Hub-Signature-256: {signature(SECRET, body)}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()  # fmt: skip
    answer = _raw(address, head + body)
    status = int(answer.split(b" ", 2)[1])
    return status, json.loads(answer.split(b"\r\n\r\n", 1)[1] or b"{}")


def _issue(number: object, labels: object = None) -> dict[str, object]:
    given = [{"name": "harness"}] if labels is None else labels
    return {"action": "opened",
            "issue": {"number": number, "title": "t", "body": "b", "labels": given}}  # fmt: skip


# --- connections that never finish, and too many of them ---------------------------------


def test_a_connection_sending_headers_and_no_body_is_answered_408_within_the_timeout(
    tmp_path: Path,
) -> None:
    trigger = _hook(tmp_path, timeout=0.5)
    try:
        began = time.monotonic()
        answer = _raw(trigger.address, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\n")
        took = time.monotonic() - began
    finally:
        trigger.close()
    assert answer.startswith(b"HTTP/1.0 408 "), answer
    assert 0.4 < took < 5
    assert trigger.poll(T0) == []


def test_a_connection_that_never_ends_its_headers_is_closed_within_the_timeout(
    tmp_path: Path,
) -> None:
    trigger = _hook(tmp_path, timeout=0.5)
    try:
        began = time.monotonic()
        answer = _raw(trigger.address, b"POST / HTTP/1.1\r\nHost: x\r\n")  # no blank line
        took = time.monotonic() - began
    finally:
        trigger.close()
    assert answer == b""  # closed, nothing started
    assert took < 5


def test_a_connection_that_sends_nothing_is_closed_within_the_timeout(tmp_path: Path) -> None:
    trigger = _hook(tmp_path, timeout=0.5)
    try:
        began = time.monotonic()
        answer = _raw(trigger.address, b"")
    finally:
        trigger.close()
    assert answer == b""
    assert time.monotonic() - began < 5


def test_idle_connections_past_the_cap_are_answered_503_and_the_endpoint_recovers(
    tmp_path: Path,
) -> None:
    trigger = _hook(tmp_path, timeout=1.0, max_connections=4)
    idle = [socket.create_connection(trigger.address, timeout=10) for _ in range(4)]
    try:
        for client in idle:
            client.sendall(b"POST / HTTP/1.1\r\n")  # and then nothing
        time.sleep(0.2)  # the four hold every place
        refused = _raw(trigger.address, b"POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
        assert refused.startswith(b"HTTP/1.0 503 "), refused
        time.sleep(1.5)  # the idle ones time out and free their places
        assert _signed(trigger.address, _issue(7)) == (202, {"status": "starting for issue #7"})
    finally:
        for client in idle:
            client.close()
        trigger.close()
    assert [start.issue for start in trigger.poll(T0)] == [7]


def test_many_idle_connections_hold_at_most_the_cap_of_threads(tmp_path: Path) -> None:
    before = threading.active_count()
    trigger = _hook(tmp_path, timeout=5.0, max_connections=4)
    clients = []
    try:
        for _ in range(40):
            client = socket.create_connection(trigger.address, timeout=10)
            client.sendall(b"POST / HTTP/1.1\r\n")
            clients.append(client)
        time.sleep(0.5)
        grown = threading.active_count() - before
    finally:
        for client in clients:
            client.close()
        trigger.close()
    assert grown <= 4 + 1  # the cap, and the server's own thread


@pytest.mark.parametrize("where", ["headers", "body"])
def test_a_connection_dripping_a_byte_at_a_time_is_cut_off_and_frees_its_place(
    tmp_path: Path, where: str
) -> None:
    trigger = _hook(tmp_path, timeout=0.5, max_connections=1)
    head = b"POST / HTTP/1.1\r\nX-Padding: " if where == "headers" else (
        b"POST / HTTP/1.1\r\nX-GitHub-Event: issues\r\nContent-Length: 900\r\n\r\n")  # fmt: skip
    began = time.monotonic()
    cut = None
    try:
        with socket.create_connection(trigger.address, timeout=10) as client:
            client.sendall(head)
            for _ in range(40):  # never silent for the timeout: only the time in all ends it
                time.sleep(0.2)
                try:
                    client.sendall(b"x")
                except OSError:
                    cut = time.monotonic() - began
                    break
        assert cut is not None, "the connection was never cut"
        assert cut < IN_ALL * 0.5 + 2
        assert _signed(trigger.address, _issue(6))[0] == 202  # its place is free again
    finally:
        trigger.close()
    assert [start.issue for start in trigger.poll(T0)] == [6]


def test_connections_reset_at_once_leave_no_place_taken(tmp_path: Path) -> None:
    trigger = _hook(tmp_path, timeout=1.0, max_connections=2)
    try:
        for _ in range(10):
            client = socket.create_connection(trigger.address, timeout=10)
            client.setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
            )
            client.close()  # a reset, mid-nothing
        time.sleep(0.3)
        assert _signed(trigger.address, _issue(3))[0] == 202
    finally:
        trigger.close()


def test_a_body_shorter_than_its_length_is_refused_not_taken(tmp_path: Path) -> None:
    trigger = _hook(tmp_path, timeout=2.0)
    body = json.dumps(_issue(4)).encode()
    try:
        with socket.create_connection(trigger.address, timeout=10) as client:
            client.sendall(
                b"POST / HTTP/1.1\r\nX-GitHub-Event: issues\r\nX-Hub-Signature-256: "
                + signature(SECRET, body[:-5]).encode()
                + f"\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                + body[:-5]
            )
            client.shutdown(socket.SHUT_WR)  # the body ends early
            answer = b"".join(iter(lambda: client.recv(1000), b""))
    finally:
        trigger.close()
    assert answer.startswith(b"HTTP/1.0 400 "), answer
    assert b"ended before its Content-Length" in answer
    assert trigger.poll(T0) == []


# --- issue numbers: positive integers, every delivery answered ------------------------------


@pytest.mark.parametrize(
    "number",
    ["5", 10**400, True, False, 2.5, 5.0, 0, -3, None, [5], {"n": 5}, 2**31],
    ids=[
        "string",
        "huge",
        "true",
        "false",
        "fraction",
        "float",
        "zero",
        "negative",
        "null",
        "list",
        "object",
        "past-32-bits",
    ],  # fmt: skip
)
def test_an_issue_number_of_the_wrong_shape_is_answered_400_and_starts_nothing(
    number: object, tmp_path: Path
) -> None:
    trigger = _hook(tmp_path)
    try:
        status, answer = _signed(trigger.address, _issue(number))
    finally:
        trigger.close()
    assert status == 400
    assert "is not an integer from 1 to 2147483647" in answer["status"]
    assert trigger.poll(T0) == []


def test_an_issue_without_a_number_is_answered_400(tmp_path: Path) -> None:
    trigger = _hook(tmp_path)
    try:
        payload = {"action": "opened", "issue": {"title": "t", "labels": [{"name": "harness"}]}}
        status, answer = _signed(trigger.address, payload)
    finally:
        trigger.close()
    assert (status, answer["status"][:24]) == (400, "the issue's number 'None")
    assert trigger.poll(T0) == []


@pytest.mark.parametrize("labels", ["harness", 7, {"name": "harness"}, [None, 3]])
def test_labels_of_the_wrong_shape_are_answered_and_start_nothing(
    labels: object, tmp_path: Path
) -> None:
    trigger = _hook(tmp_path)
    try:
        status, answer = _signed(trigger.address, _issue(9, labels))
    finally:
        trigger.close()
    assert status == 202
    assert answer["status"] == "ignored: the issue is not labelled 'harness'"
    assert trigger.poll(T0) == []


def test_a_title_and_body_that_are_not_text_do_not_reach_the_goal_as_python_reprs(
    tmp_path: Path,
) -> None:
    trigger = _hook(tmp_path)
    payload = {"action": "opened", "issue": {"number": 12, "title": {"x": 1}, "body": [1, 2],
                                             "labels": [{"name": "harness"}]}}  # fmt: skip
    try:
        assert _signed(trigger.address, payload)[0] == 202
        (start,) = trigger.poll(T0)
    finally:
        trigger.close()
    assert start.issue == 12
    assert (start.goal or "").strip() == "(issue #12)"  # no "{'x': 1}", no "[1, 2]"


@pytest.mark.parametrize(
    ("event", "body", "status", "said"),
    [
        ("ping", b"{}", 200, "pong"),
        ("ping", b"[1, 2]", 200, "pong"),
        ("issues", b"[1, 2]", 400, "the body is not a JSON object"),
        ("push", b"[]", 400, "the body is not a JSON object"),
        ("", b"5", 400, "the body is not a JSON object"),
        ("", b"\xff\xfe", 400, "the body is not JSON"),
        ("", b'{"goal": ["rm -rf /"]}', 400, "the field 'goal' is not a non-blank string"),
        ("", b'{"goal": "   "}', 400, "the field 'goal' is not a non-blank string"),
        (
            "issues",
            b'{"action": "opened", "issue": [5]}',
            202,
            "ignored: not an opened or labelled issue",
        ),
        ("push", b'{"ref": 5, "after": null}', 202, "ignored: not a push to a branch"),
    ],
)
def test_every_signed_delivery_gets_an_answer(
    event: str, body: bytes, status: int, said: str, tmp_path: Path
) -> None:
    trigger = _hook(tmp_path)
    try:
        assert _signed(trigger.address, body, event) == (status, {"status": said})
    finally:
        trigger.close()
    assert trigger.poll(T0) == []


def test_issues_polled_from_the_host_with_bad_numbers_are_passed_over(tmp_path: Path) -> None:
    with GitHubServer(token="t") as server:
        server.add_issue(5, "good", "", ["harness"])
        for key, number in enumerate(["6", True, 2.5, 10**12, -1], start=100):
            server.issues[key] = {"number": number, "title": "bad", "body": "", "state": "open",
                                  "labels": [{"name": "harness"}]}  # fmt: skip
        trigger = IssuesTrigger(
            lambda: GitHub(server.repo, api_url=server.url, token="t"), "harness", every=60
        )
        starts = trigger.poll(T0)
    assert starts == [Start("issues", "good (issue #5)", 5)]


# --- branch -> loop name, one to one --------------------------------------------------------


def test_branches_that_differ_only_in_slashes_and_dashes_make_different_loop_names() -> None:
    assert branch_slug("feature/a-b") != branch_slug("feature/a/b")
    assert branch_slug("feature/a_b") != branch_slug("feature/a/b")
    assert branch_slug("feature/a-b") == "feature_2fa-b"


def test_branch_slugs_are_one_to_one_and_loop_names_over_a_small_alphabet() -> None:
    names = ["".join(p) for n in range(1, 6) for p in itertools.product("a-_/.", repeat=n)]
    slugs = [branch_slug(name) for name in names]
    assert len(set(slugs)) == len(names)
    pattern = re.compile(LOOP_NAME_PATTERN)
    assert all(pattern.fullmatch("loop-push-" + slug) for slug in slugs)


def test_two_pushed_branches_that_used_to_share_a_name_start_two_loops(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    out = io.StringIO()
    watcher = Watcher(spec, [], out=out)
    first = watcher.start(Start("webhook", branch="feature/a-b", commit="a" * 40))
    second = watcher.start(Start("webhook", branch="feature/a/b", commit="b" * 40))
    watcher.wait()
    assert first is not None
    assert second is not None  # not "still running": a loop of its own
    fired = [json.loads(line) for line in
             (spec.root / ".harness/watch/events.jsonl").read_text().splitlines()]  # fmt: skip
    assert [(e["loop_name"], e["started"]) for e in fired] == [
        ("daily-push-feature_2fa-b", True),
        ("daily-push-feature_2fa_2fb", True),
    ]


def test_a_branch_too_long_for_a_loop_name_is_refused(tmp_path: Path) -> None:
    trigger = _hook(tmp_path)
    branch = "a/" * 60 + "b"  # 121 characters, 60 of them escaped to three
    assert len(branch_slug(branch)) > MAX_SLUG
    try:
        status, answer = _signed(
            trigger.address, {"ref": f"refs/heads/{branch}", "after": "c" * 40}, "push"
        )
    finally:
        trigger.close()
    assert (status, answer["status"]) == (
        400, f"the branch's name is longer than a loop's name may hold ({MAX_SLUG})"
    )  # fmt: skip
    assert trigger.poll(T0) == []


def test_a_branch_slug_is_a_valid_git_branch_name() -> None:
    for branch in ["feature/x", "a_b/c.d", "fix/-x", "v1.2/rc"]:
        name = f"harness/loop-push-{branch_slug(branch)}.12345678"
        subprocess.run(["git", "check-ref-format", "--branch", name], check=True,
                       capture_output=True)  # fmt: skip


# --- at most max_runs at once, the rest queued ----------------------------------------------


def test_eight_issues_at_once_run_at_most_max_runs_at_a_time_and_all_run(tmp_path: Path) -> None:
    lock = threading.Lock()
    now_running, most = [0], [0]

    @tool
    def hold() -> str:
        """Count the runs inside their round at once."""
        with lock:
            now_running[0] += 1
            most[0] = max(most[0], now_running[0])
        time.sleep(0.2)
        with lock:
            now_running[0] -= 1
        return "held"

    spec = _spec(tmp_path)
    out = io.StringIO()
    watcher = Watcher(spec, [], tools=[hold], out=out, max_runs=2)
    ids = [watcher.start(Start("issues", f"issue {n}", n)) for n in range(1, 9)]
    again = watcher.start(Start("issues", "issue 8", 8))  # queued, so still running
    watcher.wait()
    assert all(ids)
    assert again is None
    assert most[0] == 2
    assert out.getvalue().count("PASSED") == 8
    fired = [json.loads(line) for line in
             (spec.root / ".harness/watch/events.jsonl").read_text().splitlines()]  # fmt: skip
    reasons = [e["reason"] for e in fired]
    assert reasons[:2] == ["", ""]
    assert reasons[2:8] == [f"queued behind {n} runs" for n in range(2, 8)]
    assert reasons[8] == "still running (this watcher)"


@pytest.mark.parametrize("given", ["0", "-1", "two"])
def test_max_runs_must_be_a_positive_integer(given: str, tmp_path: Path) -> None:
    done = subprocess.run([HARNESS, "watch", str(tmp_path), "--max-runs", given],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 2
    assert "--max-runs" in done.stderr


@pytest.mark.parametrize(
    ("field", "value"),
    [("timeout", "0"), ("max_connections", "0"), ("timeout", "1e9"), ("max_connections", "1.5")],
)
def test_webhook_bounds_out_of_range_name_the_field(field: str, value: str, tmp_path: Path) -> None:
    (tmp_path / "loop.toml").write_text(
        'goal = "g"\n[[gates]]\ntype = "command"\ncmd = "true"\n'
        f'[[triggers]]\ntype = "webhook"\nport = 0\n{field} = {value}\n'
    )
    with pytest.raises(ConfigError, match=rf"triggers\[0\].*{field}"):
        LoopSpec.from_toml(tmp_path)


def test_a_start_past_the_full_queue_is_refused_and_the_queue_takes_starts_once_it_drains(
    tmp_path: Path,
) -> None:
    inside, go = threading.Event(), threading.Event()

    @tool
    def hold() -> str:
        """Hold the one run's place until the test lets it go."""
        inside.set()
        go.wait(60)
        return "held"

    spec = _spec(tmp_path)
    out = io.StringIO()
    watcher = Watcher(spec, [], tools=[hold], out=out, max_runs=1)
    assert watcher.start(Start("issues", "issue 1", 1)) is not None
    assert inside.wait(60)
    queued = [watcher.start(Start("issues", f"issue {n}", n)) for n in range(2, MAX_QUEUED + 2)]
    refused = watcher.start(Start("issues", "one too many", MAX_QUEUED + 2))
    # the queued loops are taken by another driver meanwhile: each ends at once, not run
    locks = [LoopLock(spec.with_changes(name=f"daily-issue-{n}", progress=None).progress_path())
             for n in range(2, MAX_QUEUED + 2)]  # fmt: skip
    for lock in locks:
        lock.acquire()
    try:
        go.set()
        watcher.wait()
    finally:
        for lock in locks:
            lock.release()
    assert all(queued)
    assert refused is None
    said = out.getvalue()
    assert f"daily-issue-{MAX_QUEUED + 2}: not started (issues): the queue is full" in said
    assert said.count("the queue is full") == 1
    assert said.count(": not run: ") == MAX_QUEUED
    fired = [json.loads(line) for line in
             (spec.root / ".harness/watch/events.jsonl").read_text().splitlines()]  # fmt: skip
    assert [e["reason"] for e in fired[-2:]] == [f"queued behind {MAX_QUEUED} runs",
                                                 "the queue is full"]  # fmt: skip
    refusal = (fired[-1]["loop_name"], fired[-1]["started"])
    assert refusal == (f"daily-issue-{MAX_QUEUED + 2}", False)
    # drained, the queue takes a start again, and that run runs
    again = watcher.start(Start("issues", "one too many", MAX_QUEUED + 2))
    watcher.wait()
    assert again is not None
    assert out.getvalue().count("PASSED") == 2
