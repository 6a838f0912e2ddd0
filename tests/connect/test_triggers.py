"""Triggers of `harness watch`: a schedule never starts a loop still running; webhook
deliveries must be signed with the shared secret."""

from __future__ import annotations

import io
import json
import socket
import textwrap
import threading
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from harness.cli.watch import Watcher
from harness.connect.deliveries import SeenDeliveries
from harness.connect.github import GitHub
from harness.connect.triggers import (
    IssuesTrigger,
    ScheduleTrigger,
    Start,
    WebhookTrigger,
    signature,
)
from harness.memory.lock import LoopLock
from harness.spec import LoopSpec
from harness.tools import tool
from tests.conftest import git, make_repo
from tests.github_server import GitHubServer

T0 = datetime(2026, 1, 1, 6, 0, 30, tzinfo=UTC)


def test_a_schedule_fires_once_per_due_time_and_collapses_missed_ones() -> None:
    trigger = ScheduleTrigger("0 * * * *", now=T0)
    assert trigger.next_firing == datetime(2026, 1, 1, 7, 0, tzinfo=UTC)
    assert trigger.poll(T0 + timedelta(minutes=59)) == []
    assert trigger.poll(datetime(2026, 1, 1, 7, 0, tzinfo=UTC)) == [Start("schedule")]  # due now
    assert trigger.next_firing == datetime(2026, 1, 1, 8, 0, tzinfo=UTC)
    assert trigger.poll(T0 + timedelta(minutes=60)) == []  # 07:00:30: fired already
    assert trigger.poll(T0 + timedelta(minutes=61)) == []
    assert trigger.poll(T0 + timedelta(hours=5)) == [Start("schedule")]  # four missed: one start
    assert trigger.next_firing == datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def _spec(tmp_path: Path) -> LoopSpec:
    project = make_repo(tmp_path / "project", {"notes.txt": "x\n"})
    script = [{"name": "hold", "arguments": {}}, "held"]
    (tmp_path / "script.json").write_text(json.dumps(script))
    (project / "loop.toml").write_text(textwrap.dedent("""\
        name = "daily"
        goal = "keep the notes"
        model = "scripted:../script.json"
        max_iterations = 1
        [critic]
        enabled = false
        [[gates]]
        type = "command"
        cmd = "true"
        [[triggers]]
        type = "schedule"
        cron = "* * * * *"
        """))  # fmt: skip
    (project / ".gitignore").write_text(".harness/\nprogress/\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "loop")
    return LoopSpec.from_toml(project)


def test_labelled_issues_start_once_each_and_the_host_is_asked_every_poll_seconds() -> None:
    with GitHubServer(token="t") as server:
        server.add_issue(5, "second", "", ["harness"])
        server.add_issue(3, "first", "it breaks", ["harness", "bug"])
        server.add_issue(4, "a question", "", ["question"])
        trigger = IssuesTrigger(
            lambda: GitHub(server.repo, api_url=server.url, token="t"), "harness", every=60
        )
        first = trigger.poll(T0)
        server.add_issue(6, "third", "", ["harness"])
        early = trigger.poll(T0 + timedelta(seconds=59))
        asked = len(server.requests)
        later = trigger.poll(T0 + timedelta(seconds=60))
    assert first == [
        Start("issues", "first\n\nit breaks\n\n(issue #3)", 3),
        Start("issues", "second (issue #5)", 5),
    ]
    assert early == []
    assert asked == 1  # the early poll did not ask the host
    assert later == [Start("issues", "third (issue #6)", 6)]  # 3 and 5 are not started again


def test_a_schedule_firing_twice_while_the_run_goes_on_starts_one_run(tmp_path: Path) -> None:
    entered, release = threading.Event(), threading.Event()

    @tool
    def hold() -> str:
        """Wait until the test lets the run go on."""
        entered.set()
        release.wait(30)
        return "released"

    spec = _spec(tmp_path)
    now = [T0]
    out = io.StringIO()
    trigger = ScheduleTrigger("* * * * *", now=T0)
    watcher = Watcher(spec, [trigger], clock=lambda: now[0], tools=[hold], out=out)
    now[0] += timedelta(minutes=1)
    watcher.tick()
    assert entered.wait(30)  # the first run is inside its round
    now[0] += timedelta(minutes=1)
    watcher.tick()  # due again: the loop is still running
    release.set()
    watcher.wait()

    runs = list((spec.root / ".harness" / "runs").iterdir())
    assert [run.name for run in runs] == watcher.started
    assert len(runs) == 1
    log = spec.root / ".harness" / "watch" / "events.jsonl"
    fired = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(e["started"], e["reason"]) for e in fired] == [
        (True, ""),
        (False, "still running (this watcher)"),
    ]
    assert "daily: not started (schedule): still running" in out.getvalue()
    assert "PASSED" in out.getvalue()

    now[0] += timedelta(minutes=1)  # once it ended, the next firing starts a fresh run
    watcher.tick()
    watcher.wait()
    assert len(watcher.started) == 2
    assert len(list((spec.root / ".harness" / "runs").iterdir())) == 2


def test_a_loop_another_process_runs_is_not_started(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    watcher = Watcher(spec, [], out=io.StringIO())
    with LoopLock(spec.progress_path()):  # `harness run` by hand, say
        assert watcher.start(Start("webhook", "do it")) is None
    assert not (spec.root / ".harness" / "runs").exists()
    (event,) = (spec.root / ".harness" / "watch" / "events.jsonl").read_text().splitlines()
    assert json.loads(event)["reason"].startswith("still running (pid ")


def _post(address: tuple[str, int], body: bytes, headers: dict[str, str]) -> int:
    request = urllib.request.Request(f"http://{address[0]}:{address[1]}/", data=body,
                                     headers=headers, method="POST")  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


ISSUE_EVENT = json.dumps({
    "action": "labeled",
    "issue": {"number": 5, "title": "Crash on empty input", "body": "parse('') raises",
              "labels": [{"name": "harness"}]},
}).encode()  # fmt: skip


@pytest.mark.parametrize(
    "signed",
    [None, "sha256=" + "0" * 64, signature(b"another secret", ISSUE_EVENT), "sha1=abc"],
    ids=["missing", "zeros", "other-secret", "wrong-scheme"],
)
def test_a_webhook_with_a_wrong_signature_is_refused(signed: str | None, tmp_path: Path) -> None:
    seen = SeenDeliveries(tmp_path / "deliveries")
    trigger = WebhookTrigger(b"shared secret", seen=seen, port=0)
    try:
        headers = {"X-GitHub-Event": "issues", "Content-Type": "application/json"}
        if signed is not None:
            headers["X-Hub-Signature-256"] = signed
        assert _post(trigger.address, ISSUE_EVENT, headers) == 401
        assert trigger.poll(T0) == []
    finally:
        trigger.close()
    assert not seen.path.exists()  # an unsigned request cannot make a later delivery a "replay"


@pytest.mark.parametrize("length", ["-1", "ten"])
def test_a_delivery_with_a_bad_length_is_refused_unread(length: str, tmp_path: Path) -> None:
    trigger = WebhookTrigger(b"shared secret", seen=SeenDeliveries(tmp_path / "seen"), port=0)
    try:
        with socket.create_connection(trigger.address, timeout=10) as client:
            client.sendall(
                f"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n{{".encode()
            )
            answer = client.recv(1000)  # the body never ends: reading it would wait forever
        assert trigger.poll(T0) == []
    finally:
        trigger.close()
    assert answer.startswith(b"HTTP/1.0 400 "), answer


def test_a_signed_labelled_issue_delivery_starts_a_loop_with_the_issue_as_goal(
    tmp_path: Path,
) -> None:
    trigger = WebhookTrigger(b"shared secret", seen=SeenDeliveries(tmp_path / "seen"), port=0)
    try:
        sign = {"X-Hub-Signature-256": signature(b"shared secret", ISSUE_EVENT)}
        assert trigger.address[0] == "127.0.0.1"
        assert _post(trigger.address, ISSUE_EVENT, {"X-GitHub-Event": "issues", **sign}) == 202
        unlabelled = ISSUE_EVENT.replace(b'"harness"', b'"question"')
        signed = {"X-Hub-Signature-256": signature(b"shared secret", unlabelled)}
        assert _post(trigger.address, unlabelled, {"X-GitHub-Event": "issues", **signed}) == 202
        (start,) = trigger.poll(T0)
    finally:
        trigger.close()
    assert start == Start("webhook", "Crash on empty input\n\nparse('') raises\n\n(issue #5)", 5)


def test_watch_without_triggers_or_without_the_webhook_secret_names_the_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.cli.watch import make_triggers
    from harness.core.errors import ConfigError

    (tmp_path / "loop.toml").write_text('goal = "g"\n[[gates]]\ntype = "command"\ncmd = "true"\n')
    with pytest.raises(ConfigError, match=r"loop\.toml: field 'triggers': give at least one"):
        make_triggers(LoopSpec.from_toml(tmp_path), now=T0)
    with (tmp_path / "loop.toml").open("a") as toml:
        toml.write('[[triggers]]\ntype = "webhook"\nport = 0\nsecret_env = "HOOK_SHARED"\n')
    monkeypatch.delenv("HOOK_SHARED", raising=False)
    with pytest.raises(ConfigError, match=r"field 'triggers\[0\]\.secret_env': .* HOOK_SHARED"):
        make_triggers(LoopSpec.from_toml(tmp_path), now=T0)
    monkeypatch.setenv("HOOK_SHARED", "s3cret-value")
    (trigger,) = make_triggers(LoopSpec.from_toml(tmp_path), now=T0)
    assert isinstance(trigger, WebhookTrigger)
    trigger.close()


def _deliver(address: tuple[str, int], body: bytes, delivery: str | None) -> int:
    headers = {"X-GitHub-Event": "issues", "X-Hub-Signature-256": signature(b"s3cret", body)}
    if delivery is not None:
        headers["X-GitHub-Delivery"] = delivery
    return _post(address, body, headers)


def _webhook_project(tmp_path: Path) -> LoopSpec:
    (tmp_path / "loop.toml").write_text(
        'goal = "g"\n[[gates]]\ntype = "command"\ncmd = "true"\n'
        '[[triggers]]\ntype = "webhook"\nport = 0\nsecret_env = "HOOK_SHARED"\n'
    )
    return LoopSpec.from_toml(tmp_path)


def test_a_replayed_delivery_starts_nothing_under_a_new_id_or_after_the_watcher_restarts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.cli.watch import make_triggers

    monkeypatch.setenv("HOOK_SHARED", "s3cret")
    spec = _webhook_project(tmp_path)
    other = ISSUE_EVENT.replace(b'"number": 5', b'"number": 6')
    (first,) = make_triggers(spec, now=T0)
    try:
        assert _deliver(first.address, ISSUE_EVENT, "guid-1") == 202
        assert _deliver(first.address, ISSUE_EVENT, "guid-1") == 409  # replayed as it was
        assert _deliver(first.address, ISSUE_EVENT, "guid-2") == 409  # the id is not signed
        assert _deliver(first.address, ISSUE_EVENT, None) == 409
        starts = first.poll(T0)
    finally:
        assert isinstance(first, WebhookTrigger)
        first.close()
    assert [start.issue for start in starts] == [5]

    (again,) = make_triggers(spec, now=T0)  # the watcher started again
    try:
        assert _deliver(again.address, ISSUE_EVENT, "guid-3") == 409
        assert _deliver(again.address, other, "guid-1") == 409  # a new body under a taken id
        assert _deliver(again.address, other, "guid-4") == 202
        starts = again.poll(T0)
    finally:
        assert isinstance(again, WebhookTrigger)
        again.close()
    assert [start.issue for start in starts] == [6]
    remembered = (tmp_path / ".harness" / "watch" / "deliveries").read_text().splitlines()
    assert remembered[0] == "id:guid-1"
    assert remembered[2] == "id:guid-4"
    assert len(remembered) == 4  # ids and body digests of the two deliveries taken, no more


@pytest.mark.parametrize("delivery", ["", "a b", "x" * 201, "id\u00e9"])
def test_a_delivery_with_a_malformed_id_is_refused(delivery: str, tmp_path: Path) -> None:
    seen = SeenDeliveries(tmp_path / "seen")
    trigger = WebhookTrigger(b"s3cret", seen=seen, port=0)
    try:
        body = ISSUE_EVENT
        headers = {"X-GitHub-Event": "issues", "X-Hub-Signature-256": signature(b"s3cret", body),
                   "X-GitHub-Delivery": delivery}  # fmt: skip
        assert _post(trigger.address, body, headers) == 400
        assert trigger.poll(T0) == []
        assert _deliver(trigger.address, body, "good-id") == 202  # nothing was remembered
    finally:
        trigger.close()


def test_seen_deliveries_keep_the_most_recent_within_the_bound(tmp_path: Path) -> None:
    path = tmp_path / "deliveries"
    seen = SeenDeliveries(path, bound=3)
    for n in range(20):
        assert seen.take(f"d{n}", f"body {n}".encode())
    assert len(path.read_text().splitlines()) <= 2 * 3 * 2  # rewritten when twice the bound
    for remembered in (seen, SeenDeliveries(path, bound=3)):  # and after a restart
        assert not remembered.take("d19", b"new")
        assert not remembered.take("new", b"body 17")
    assert SeenDeliveries(path, bound=3).take("d0", b"body 0")  # the oldest are let go


SHA = "a" * 40


@pytest.mark.parametrize(
    ("payload", "status", "expected"),
    [
        (
            {"ref": "refs/heads/feature/x", "after": SHA},
            202,
            [Start("webhook", None, None, "feature/x", SHA)],
        ),
        ({"ref": "refs/heads/main", "after": SHA}, 202, []),  # matches no pattern
        ({"ref": "refs/tags/feature/x", "after": SHA}, 202, []),  # a tag, not a branch
        ({"ref": "refs/heads/feature/x", "after": "0" * 40, "deleted": True}, 202, []),
        ({"ref": "refs/heads/feature/x", "after": "HEAD"}, 202, []),  # names no commit
        ({"ref": "refs/heads/feature/a:refs/heads/main", "after": SHA}, 400, []),
        ({"ref": "refs/heads/feature/../../x", "after": SHA}, 400, []),
        ({"ref": "refs/heads/harness/fix-1a2b3c4d", "after": SHA}, 202, []),  # a run's result
    ],
    ids=["watched", "unwatched", "tag", "deleted", "no-commit", "refspec", "dots", "run-branch"],
)
def test_a_push_delivery_starts_a_loop_only_for_a_watched_branch(
    payload: dict[str, object], status: int, expected: list[Start], tmp_path: Path
) -> None:
    trigger = WebhookTrigger(b"s3cret", seen=SeenDeliveries(tmp_path / "seen"), port=0,
                             branches=["feature/*", "release-*", "harness/*"])  # fmt: skip
    try:
        body = json.dumps(payload).encode()
        headers = {"X-GitHub-Event": "push", "X-Hub-Signature-256": signature(b"s3cret", body)}
        assert _post(trigger.address, body, headers) == status
        assert trigger.poll(T0) == expected
    finally:
        trigger.close()


def test_a_push_is_ignored_by_a_webhook_watching_no_branches(tmp_path: Path) -> None:
    trigger = WebhookTrigger(b"s3cret", seen=SeenDeliveries(tmp_path / "seen"), port=0)
    try:
        body = json.dumps({"ref": "refs/heads/feature/x", "after": SHA}).encode()
        headers = {"X-GitHub-Event": "push", "X-Hub-Signature-256": signature(b"s3cret", body)}
        assert _post(trigger.address, body, headers) == 202
        assert trigger.poll(T0) == []
    finally:
        trigger.close()


def test_watching_pushed_branches_needs_a_branch_of_the_runs_own(tmp_path: Path) -> None:
    from harness.core.errors import ConfigError

    (tmp_path / "loop.toml").write_text(
        'goal = "g"\nisolation = "none"\n[[gates]]\ntype = "command"\ncmd = "true"\n'
        '[[triggers]]\ntype = "webhook"\nbranches = ["feature/*"]\n'
    )
    with pytest.raises(ConfigError, match=r"triggers\[0\]\.branches.*isolation other than"):
        LoopSpec.from_toml(tmp_path)


def test_the_same_delivery_sent_eight_times_at_once_is_taken_once(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    trigger = WebhookTrigger(b"s3cret", seen=SeenDeliveries(tmp_path / "seen"), port=0)
    try:
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda n: _deliver(trigger.address, ISSUE_EVENT, f"g{n}"),
                                    range(8)))  # fmt: skip
        starts = trigger.poll(T0)
    finally:
        trigger.close()
    assert sorted(answers) == [202] + [409] * 7
    assert [start.issue for start in starts] == [5]


def test_a_link_planted_at_the_deliveries_file_is_refused_not_written_through(
    tmp_path: Path,
) -> None:
    from harness.core.nofollow import UnsafePath

    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    folder = tmp_path / ".harness" / "watch"
    folder.mkdir(parents=True)
    (folder / "deliveries").symlink_to(victim)
    with pytest.raises(UnsafePath):
        SeenDeliveries(folder / "deliveries", root=tmp_path)
    (folder / "deliveries").unlink()
    seen = SeenDeliveries(folder / "deliveries", root=tmp_path)
    (folder / "deliveries").symlink_to(victim)  # planted after the watcher started
    with pytest.raises(UnsafePath):
        seen.take("d1", b"body")
    assert victim.read_text() == "keep me\n"
