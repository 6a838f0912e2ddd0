"""What each signed webhook delivery starts, and the exact answer to each one refused: the events
that start a loop and the ones that must not (a closed issue, a tag, a blank goal), and the status
and word of every refusal, over real HTTP on 127.0.0.1 with real HMAC signatures."""

from __future__ import annotations

import dataclasses
import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness.connect.deliveries import SeenDeliveries
from harness.connect.triggers import Start, WebhookTrigger, signature
from harness.spec import LoopSpec
from tests.connect.test_watcher_bounds import SECRET, T0, _hook, _issue, _signed

SHA = "c" * 40


def _exchange(address: tuple[str, int], head: bytes, body: bytes = b"") -> tuple[int, dict, dict]:
    """Send a request as it is, then end the sending side; the answer's status, headers, JSON."""
    with socket.create_connection(address, timeout=10) as client:
        client.sendall(head + body)
        client.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := client.recv(65536):
            chunks.append(chunk)
    top, _, payload = b"".join(chunks).partition(b"\r\n\r\n")
    status_line, *lines = top.decode().split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines)
    return int(status_line.split(" ")[1]), headers, json.loads(payload)


def _head(body: bytes, *, length: int | None = None, signed: bytes = SECRET,
          delivery: str | None = None) -> bytes:  # fmt: skip
    extra = f"X-GitHub-Delivery: {delivery}\r\n" if delivery is not None else ""
    return (f"POST / HTTP/1.1\r\nHost: x\r\nX-Hub-Signature-256: {signature(signed, body)}\r\n"
            f"Content-Length: {len(body) if length is None else length}\r\n{extra}\r\n").encode()  # fmt: skip


def test_only_an_opened_labelled_or_reopened_issue_starts_a_loop(tmp_path: Path) -> None:
    actions = ["opened", "labeled", "reopened", "closed", "edited", "unlabeled", "deleted"]
    trigger = _hook(tmp_path)
    try:
        answers = [_signed(trigger.address, {**_issue(n), "action": action})
                   for n, action in enumerate(actions, start=1)]  # fmt: skip
        starts = trigger.poll(T0)
    finally:
        trigger.close()
    ignored = (202, {"status": "ignored: not an opened or labelled issue"})
    assert answers == [
        (202, {"status": "starting for issue #1"}),
        (202, {"status": "starting for issue #2"}),
        (202, {"status": "starting for issue #3"}),
        *[ignored] * 4,
    ]
    assert starts == [Start("webhook", f"t\n\nb\n\n(issue #{n})", n) for n in (1, 2, 3)]


@pytest.mark.parametrize(
    "ref", ["refs/tags/v1", "refs/remotes/origin/main", "refs/pull/3/head", "main", "heads/main"]
)
def test_with_every_branch_watched_a_tag_or_another_ref_starts_nothing(
    ref: str, tmp_path: Path
) -> None:
    trigger = _hook(tmp_path)  # branches = ["*"]: every branch, and "*" crosses "/"
    try:
        answer = _signed(trigger.address, {"ref": ref, "after": SHA}, "push")
    finally:
        trigger.close()
    assert answer == (202, {"status": "ignored: not a push to a branch"})
    assert trigger.poll(T0) == []


def test_with_every_branch_watched_a_push_to_a_branch_starts_on_its_commit(
    tmp_path: Path,
) -> None:
    trigger = _hook(tmp_path)
    try:
        answer = _signed(trigger.address, {"ref": "refs/heads/v1", "after": SHA}, "push")
        starts = trigger.poll(T0)
    finally:
        trigger.close()
    assert answer == (202, {"status": f"starting on v1 at {'c' * 12}"})
    assert starts == [Start("webhook", branch="v1", commit=SHA)]


def test_a_branch_whose_loop_name_part_is_120_characters_starts_and_one_more_is_refused(
    tmp_path: Path,
) -> None:
    trigger = _hook(tmp_path)
    try:
        answers = [_signed(trigger.address, {"ref": f"refs/heads/{branch}", "after": SHA}, "push")
                   for branch in ("b" * 120, "b" * 121, "a/" + "b" * 117, "a/" + "b" * 116)]  # fmt: skip
        starts = trigger.poll(T0)
    finally:
        trigger.close()
    refused = (400, {"status": "the branch's name is longer than a loop's name may hold (120)"})
    assert answers == [
        (202, {"status": f"starting on {'b' * 120} at {'c' * 12}"}),
        refused,
        refused,  # "/" is spelt "_2f": 4 + 117 characters
        (202, {"status": f"starting on a/{'b' * 116} at {'c' * 12}"}),
    ]
    assert [start.branch for start in starts] == ["b" * 120, "a/" + "b" * 116]


def test_a_reviewers_word_on_a_pull_request_is_a_start_with_it_and_an_outsiders_is_logged(
    tmp_path: Path,
) -> None:
    from harness.connect.reviews import Review

    trigger = WebhookTrigger(SECRET, seen=SeenDeliveries(tmp_path / "seen"), port=0,
                             reviewers=["alice"], handle="@bot")  # fmt: skip

    def review(login: str) -> dict[str, object]:
        return {"action": "submitted", "pull_request": {"number": 7},
                "review": {"user": {"login": login}, "body": "rename it",
                           "state": "changes_requested"}}  # fmt: skip

    try:
        taken = _signed(trigger.address, review("alice"), "pull_request_review")
        outsider = _signed(trigger.address, review("mallory"), "pull_request_review")
        starts = trigger.poll(T0)
    finally:
        trigger.close()
    assert taken == (202, {"status": "taken: a review of pull request #7 by @alice"})
    assert outsider == (202, {"status": "ignored: @mallory is not one of the reviewers"})
    assert starts == [
        Start("webhook", review=Review(7, "alice", "rename it", "changes requested")),
        Start("webhook", ignored="pull_request_review: @mallory is not one of the reviewers"),
    ]


def test_a_goal_delivery_starts_a_loop_with_the_goal_trimmed(tmp_path: Path) -> None:
    trigger = _hook(tmp_path)
    try:
        answer = _signed(trigger.address, {"goal": "  fix the parser\n", "id": 1}, "")
        starts = trigger.poll(T0)
    finally:
        trigger.close()
    assert answer == (202, {"status": "starting"})
    assert starts == [Start("webhook", "fix the parser")]


@pytest.mark.parametrize("goal", ["", "   ", "\n\t", None, 5, ["fix it"], {"text": "fix it"}])
def test_a_blank_goal_or_one_that_is_not_text_is_refused_naming_the_field(
    goal: object, tmp_path: Path
) -> None:
    trigger = _hook(tmp_path)
    try:
        answer = _signed(trigger.address, {"goal": goal}, "")
    finally:
        trigger.close()
    assert answer == (400, {"status": "the field 'goal' is not a non-blank string"})
    assert trigger.poll(T0) == []


def test_an_object_without_a_goal_or_an_event_is_ignored(tmp_path: Path) -> None:
    trigger = _hook(tmp_path)
    try:
        answer = _signed(trigger.address, {"zen": "Keep it logically awesome."}, "")
    finally:
        trigger.close()
    assert answer == (202, {"status": "ignored: no goal and not an issue event"})
    assert trigger.poll(T0) == []


def test_a_delivery_of_exactly_the_size_bound_is_read_and_one_byte_more_is_refused_unread(
    tmp_path: Path,
) -> None:
    trigger = _hook(tmp_path)
    start = json.dumps({"goal": "big", "pad": ""}).encode()
    body = start[:-2] + b"x" * (1_000_000 - len(start)) + start[-2:]  # the documented bound
    try:
        taken = _exchange(trigger.address, _head(body), body)
        over = _exchange(trigger.address, _head(body, length=1_000_001))  # and no body sent
        starts = trigger.poll(T0)
    finally:
        trigger.close()
    assert (taken[0], taken[2]) == (202, {"status": "starting"})
    assert (over[0], over[2]) == (413, {"status": "too large"})
    assert starts == [Start("webhook", "big")]


def test_every_answer_is_json_with_its_length(tmp_path: Path) -> None:
    trigger = _hook(tmp_path)
    body = b'{"goal": "answer me"}'
    try:
        status, headers, answer = _exchange(trigger.address, _head(body), body)
    finally:
        trigger.close()
    assert (status, answer) == (202, {"status": "starting"})
    assert headers["Content-Type"] == "application/json"
    assert headers["Content-Length"] == str(len(json.dumps({"status": "starting"})))


def test_each_refusal_has_its_status_and_reason_and_starts_nothing(tmp_path: Path) -> None:
    trigger = _hook(tmp_path)
    body = b'{"goal": "refused"}'
    try:
        answers = [
            _exchange(trigger.address, _head(body, length=len(body) + 5), body),  # cut short
            _exchange(trigger.address, _head(body, signed=b"another secret"), body),
            _exchange(trigger.address, _head(body, delivery="a b"), body),
            _exchange(trigger.address, _head(b"", length=0)),  # signed, but no body
        ]
        starts = trigger.poll(T0)
    finally:
        trigger.close()
    assert [(status, said) for status, _, said in answers] == [
        (400, {"status": "the body ended before its Content-Length"}),
        (401, {"status": "bad signature"}),
        (400, {"status": "bad X-GitHub-Delivery id"}),
        (400, {"status": "the body is not JSON"}),
    ]
    assert starts == []


def test_a_bad_length_is_quoted_in_the_refusal_cut_at_20_characters(tmp_path: Path) -> None:
    trigger = _hook(tmp_path)
    given = "12345678901234567890" + "x" * 30
    try:
        status, _, answer = _exchange(
            trigger.address,
            f"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {given}\r\n\r\n".encode(),
        )
    finally:
        trigger.close()
    assert (status, answer) == (400, {"status": "bad Content-Length: '12345678901234567890'"})


def test_a_silent_body_is_answered_408_after_the_read_timeout_not_the_connections_whole_time(
    tmp_path: Path,
) -> None:
    trigger = WebhookTrigger(SECRET, seen=SeenDeliveries(tmp_path / "seen"), port=0, timeout=1.0)
    try:
        with socket.create_connection(trigger.address, timeout=10) as client:
            began = time.monotonic()
            client.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\n\r\n")
            first = client.recv(4096)  # the body never comes; the connection stays open
            took = time.monotonic() - began
            answer = first + b"".join(iter(lambda: client.recv(4096), b""))
    finally:
        trigger.close()
    assert answer.startswith(b"HTTP/1.0 408 "), answer
    assert b"the body did not arrive within 1 seconds" in answer
    assert took < 2.5  # one silence of 1 s, not the connection's 3 s in all


def test_a_replayed_delivery_is_answered_409_with_the_reason(tmp_path: Path) -> None:
    trigger = _hook(tmp_path)
    body = b'{"goal": "once"}'
    try:
        first = _exchange(trigger.address, _head(body, delivery="g-1"), body)
        again = _exchange(trigger.address, _head(body, delivery="g-2"), body)
        starts = trigger.poll(T0)
    finally:
        trigger.close()
    assert (first[0], first[2]) == (202, {"status": "starting"})
    assert (again[0], again[2]) == (409, {"status": "replayed: this delivery was taken before"})
    assert starts == [Start("webhook", "once")]


def test_a_delivery_the_watcher_fails_on_is_answered_500_and_the_next_is_served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trigger = WebhookTrigger(SECRET, seen=SeenDeliveries(tmp_path / "seen"), port=0)
    real = trigger.accept

    def failing(event: str, body: bytes) -> tuple[int, str]:
        if b"fail" in body:
            raise RuntimeError("an unexpected failure")
        return real(event, body)

    monkeypatch.setattr(trigger, "accept", failing)
    try:
        failed = _signed(trigger.address, {"goal": "fail"}, "")
        served = _signed(trigger.address, {"goal": "go on"}, "")
        starts = trigger.poll(T0)
    finally:
        trigger.close()
    assert failed == (500, {"status": "not taken: RuntimeError"})
    assert served == (202, {"status": "starting"})
    assert starts == [Start("webhook", "go on")]


def test_a_closed_endpoint_serves_no_more_and_leaves_no_thread(tmp_path: Path) -> None:
    before = set(threading.enumerate())
    trigger = _hook(tmp_path)
    (serving,) = [t for t in threading.enumerate() if t not in before]
    assert serving.name == "harness-webhook"
    address = trigger.address
    assert _signed(address, {"goal": "before"}, "")[0] == 202
    trigger.close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(address, timeout=5).close()
    serving.join(5)
    assert not serving.is_alive()


def test_endpoints_made_without_a_port_each_listen_on_a_free_one(tmp_path: Path) -> None:
    first = WebhookTrigger(SECRET, seen=SeenDeliveries(tmp_path / "one"))
    try:
        second = WebhookTrigger(SECRET, seen=SeenDeliveries(tmp_path / "two"))
        try:
            answers = [_signed(t.address, {"goal": "g"}, "") for t in (first, second)]
        finally:
            second.close()
    finally:
        first.close()
    assert first.address[0] == second.address[0] == "127.0.0.1"
    assert first.address[1] != second.address[1]
    assert answers == [(202, {"status": "starting"})] * 2


def test_a_process_that_never_closes_its_endpoint_still_exits(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from harness.connect.deliveries import SeenDeliveries\n"
        "from harness.connect.triggers import WebhookTrigger\n"
        "hook = WebhookTrigger(b's', seen=SeenDeliveries(Path(sys.argv[1])), port=0)\n"
        "print(hook.address[1])\n"  # and the watcher ends without closing it (a crash, say)
    )
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "seen")],
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 0


def test_a_start_cannot_be_changed_once_queued() -> None:
    start = Start("webhook", "a goal")
    with pytest.raises(dataclasses.FrozenInstanceError):
        start.goal = "another goal"  # type: ignore[misc]


def test_a_webhook_triggers_bounds_default_to_ten_seconds_and_32_connections(
    tmp_path: Path,
) -> None:
    (tmp_path / "loop.toml").write_text(
        'goal = "g"\n[[gates]]\ntype = "command"\ncmd = "true"\n[[triggers]]\ntype = "webhook"\n'
    )
    (entry,) = LoopSpec.from_toml(tmp_path).triggers
    assert (entry.timeout, entry.max_connections) == (10.0, 32)  # type: ignore[union-attr]
