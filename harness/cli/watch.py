"""``harness watch``: run a loop whenever one of its ``[[triggers]]`` fires.

Each start runs the same outer loop as ``harness run`` (in a thread of the watcher), with the
trigger's input in its task: an issue's title and body become the goal of a loop of its own,
``NAME-issue-N``, whose connectors comment on that issue; a pushed branch is fetched and a loop
of its own, ``NAME-push-BRANCH``, works on the pushed commit, its pull request based on that
branch. A review of one of the loop's own pull requests (by one of the trigger's ``reviewers``)
reopens the run on that pull request's branch, the review's text queued as a note for its next
round (:mod:`harness.connect.reviews`). A loop still running (this watcher's run, or any process holding its lock) is never
started a second time; every start, and every start refused, is a ``trigger`` event in
``.harness/watch/events.jsonl`` (a started run's log begins with it too). The webhook
deliveries taken are remembered beside it (``deliveries``), so that none is taken twice.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, wait
from datetime import UTC, datetime
from functools import partial
from typing import TextIO

from harness.assemble.connectors import host_of
from harness.assemble.launch import recorded_loop
from harness.assemble.named_models import Overrides
from harness.cli.exit_codes import EXIT_PASSED
from harness.cli.watch_reviews import reviewed_loop, run_heads
from harness.connect.deliveries import SeenDeliveries
from harness.connect.git_publish import fetch_branch
from harness.connect.github import HostError
from harness.connect.review_poll import ReviewsTrigger
from harness.connect.triggers import (
    IssuesTrigger,
    ScheduleTrigger,
    Start,
    Trigger,
    WebhookTrigger,
    branch_slug,
)
from harness.core.errors import ConfigError
from harness.core.event_schema import TriggerEvent
from harness.memory.lock import LoopLock
from harness.observe.events import EVENTS_FILE, EventLog
from harness.observe.run_summary import RUNS_DIR
from harness.outer.options import new_run_id
from harness.scale.job import Job
from harness.scale.pool import LocalPool
from harness.spec import LoopSpec
from harness.spec.sections import (
    IssuesTriggerConfig,
    ReviewsTriggerConfig,
    ScheduleTriggerConfig,
)
from harness.tools import Tool

MAX_RUNS = 2
"""Runs of a watcher going on at once unless ``--max-runs`` says otherwise."""

MAX_QUEUED = 100
"""Starts waiting for a free run at most; one more is refused (``the queue is full``)."""

WATCH_DIR = "watch"  # under .harness/: the watcher's own event log and state
DELIVERIES_FILE = "deliveries"  # in WATCH_DIR: the webhook deliveries taken


Verdict = Callable[..., None]
"""How a finished run is told: :func:`harness.cli.commands.print_verdict`'s signature."""


def watch(args: argparse.Namespace, spec: LoopSpec, verdict: Verdict) -> int:
    """``harness watch``: poll ``spec``'s triggers as ``args`` say; ``verdict`` tells each run."""
    triggers = make_triggers(spec, now=datetime.now(UTC))
    overrides = Overrides(model=args.model, critic_model=args.critic_model)
    watcher = Watcher(spec, triggers, overrides=overrides, verdict=verdict,
                      max_runs=args.max_runs)  # fmt: skip
    try:
        print(f"watching {spec.name}: {', '.join(t.kind for t in triggers)}", file=sys.stderr)
        watcher.run(polls=1 if args.once else args.polls, interval=args.interval)
    finally:
        watcher.close()
    if args.once and not watcher.started:
        times = [t.next_firing for t in triggers if isinstance(t, ScheduleTrigger)]
        when = f"; the schedule fires next at {min(times):%Y-%m-%d %H:%M} UTC" if times else ""
        print(f"{spec.name}: nothing was due{when}", file=sys.stderr)
    return EXIT_PASSED


def make_triggers(spec: LoopSpec, *, now: datetime) -> list[Trigger]:
    """The spec's ``[[triggers]]``; a webhook's endpoint starts listening here, refusing the
    deliveries taken before (by any of them, in this watcher or an earlier one)."""
    if not spec.triggers:
        raise ConfigError(
            f"{spec.source}: field 'triggers': give at least one [[triggers]] to watch"
        )
    seen = SeenDeliveries(spec.root / RUNS_DIR.parent / WATCH_DIR / DELIVERIES_FILE, root=spec.root)
    client = host_of(spec.github, spec.redactor().redact_text).client if spec.github else None
    made: list[Trigger] = []
    for index, entry in enumerate(spec.triggers):
        if isinstance(entry, ScheduleTriggerConfig):
            made.append(ScheduleTrigger(entry.cron, now=now, fresh=entry.fresh))
        elif isinstance(entry, IssuesTriggerConfig):
            assert client is not None, "LoopSpec checks that the issues trigger has [github]"
            made.append(IssuesTrigger(client, entry.label, every=entry.poll))
        elif isinstance(entry, ReviewsTriggerConfig):
            assert client is not None, "LoopSpec checks that reviews come with [github]"
            made.append(ReviewsTrigger(client, partial(run_heads, spec), reviewers=entry.reviewers,
                                       handle=entry.handle, every=entry.poll))  # fmt: skip
        else:
            secret = os.environ.get(entry.secret_env, "")
            if not secret:
                raise ConfigError(
                    f"{spec.source}: field 'triggers[{index}].secret_env': the environment "
                    f"variable {entry.secret_env} holding the webhook's secret is not set"
                )
            try:
                made.append(WebhookTrigger(secret.encode(), seen=seen, host=entry.host,
                                           port=entry.port, label=entry.label,
                                           branches=entry.branches, timeout=entry.timeout,
                                           max_connections=entry.max_connections,
                                           fresh=entry.fresh, reviewers=entry.reviewers,
                                           handle=entry.handle))  # fmt: skip
            except OSError as exc:
                raise ConfigError(
                    f"{spec.source}: field 'triggers[{index}]': cannot listen on "
                    f"{entry.host}:{entry.port}: {exc.strerror}"
                ) from exc
    return made


class Watcher:
    """Polls ``triggers`` and starts ``spec``'s loop for each start, never twice at once."""

    def __init__(
        self,
        spec: LoopSpec,
        triggers: Sequence[Trigger],
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        overrides: Overrides | None = None,
        tools: Sequence[Tool] = (),
        out: TextIO | None = None,
        verdict: Verdict | None = None,
        max_runs: int = MAX_RUNS,
    ) -> None:
        self.spec = spec
        self.max_runs = max_runs
        self.triggers = tuple(triggers)
        self.clock = clock
        self.overrides = overrides or Overrides()
        self.tools = tuple(tools)
        self.out = out or sys.stdout
        self.verdict = verdict
        self.log = EventLog(
            spec.root / RUNS_DIR.parent / WATCH_DIR / EVENTS_FILE, run_id="watch",
            redactor=spec.redactor(), root=spec.root,
        )  # fmt: skip
        self._lock = threading.Lock()
        self._pool = LocalPool()
        self._running: dict[str, Future[None]] = {}  # by loop name: running or queued
        self._queue: deque[Job[None]] = deque()  # runs waiting for a free place
        self._active = 0  # runs going on (at most max_runs)
        self.started: list[str] = []  # run ids, in order

    def run(self, *, polls: int | None, interval: float,
            sleep: Callable[[float], None] = time.sleep) -> None:  # fmt: skip
        """Poll ``polls`` times (None: until interrupted), ``interval`` seconds apart, then wait
        for the runs started to end."""
        done = 0
        while polls is None or done < polls:
            self.tick()
            done += 1
            if polls is None or done < polls:
                sleep(interval)
        self.wait()

    def tick(self) -> None:
        """Poll every trigger once and start what is due."""
        now = self.clock()
        for trigger in self.triggers:
            try:
                starts = trigger.poll(now)
            except Exception as exc:  # noqa: BLE001 - one trigger's host down stops no other
                print(self.log.redactor.redact_text(f"harness watch: {trigger.kind}: {exc}"),
                      file=sys.stderr)  # fmt: skip
                continue
            for start in starts:
                self.start(start)

    def start(self, start: Start) -> str | None:
        """Start the loop for ``start`` in a thread; its run id, or None when it is running (or
        the start is refused: a delivery ignored, a review of no pull request of the loop's)."""
        review = start.review
        event = TriggerEvent(trigger=start.trigger, loop_name=self.spec.name, started=False,
                             issue=start.issue, branch=start.branch, commit=start.commit,
                             pull=review and review.pull,
                             author=review and review.author)  # fmt: skip
        if start.ignored:
            self.log.emit(event.model_copy(update={"reason": start.ignored}))
            return None
        if review is None:
            spec = self._spec_for(start)
        else:
            try:
                spec, issue = reviewed_loop(self.spec, review)
            except (HostError, ConfigError) as exc:
                self.log.emit(event.model_copy(update={"reason": str(exc)[:500]}))
                print(f"{self.spec.name}: a review of #{review.pull} starts nothing: {exc}",
                      file=self.out)  # fmt: skip
                return None
            start = dataclasses.replace(start, issue=issue)
        event = event.model_copy(update={"loop_name": spec.name, "issue": start.issue})
        with self._lock:
            mine = self._running.get(spec.name)
            ours = mine is not None and not mine.done()
            holder = None if ours else LoopLock(spec.progress_path()).holder()
            if ours or holder is not None:
                who = f"pid {holder.get('pid', '?')}" if holder else "this watcher"
                self.log.emit(event.model_copy(update={"reason": f"still running ({who})"}))
                print(f"{spec.name}: not started ({start.trigger}): still running", file=self.out)
                return None
            if len(self._queue) >= MAX_QUEUED:
                self.log.emit(event.model_copy(update={"reason": "the queue is full"}))
                print(f"{spec.name}: not started ({start.trigger}): the queue is full",
                      file=self.out)  # fmt: skip
                return None
            run_id = new_run_id()
            waiting = self._active >= self.max_runs
            started = event.model_copy(update={
                "started": True, "started_run": run_id,
                "reason": f"queued behind {self._active + len(self._queue)} runs" if waiting
                else "",
            })  # fmt: skip
            self.started.append(run_id)
            self.log.emit(started)
            future: Future[None] = Future()
            self._running[spec.name] = future
            run = partial(self._run, spec, start, started, run_id)
            self._queue.append(Job(spec.name, partial(self._go, future, run)))
            self._next()
        return run_id

    def _next(self) -> None:
        """Start the queued runs a free place allows (the caller holds the lock)."""
        while self._queue and self._active < self.max_runs:
            self._active += 1
            self._pool.submit(self._queue.popleft())

    def _go(self, future: Future[None], run: Callable[[], None], _place: object) -> None:
        try:
            run()
        finally:
            with self._lock:
                self._active -= 1
                self._next()
            future.set_result(None)

    def wait(self) -> None:
        """Wait for every run started (and queued) to end."""
        while pending := [f for f in self._running.values() if not f.done()]:
            wait(pending)

    def close(self) -> None:
        for trigger in self.triggers:
            if isinstance(trigger, WebhookTrigger):
                trigger.close()

    def _spec_for(self, start: Start) -> LoopSpec:
        changes: dict[str, object] = {}
        if start.goal is not None:
            changes["goal"] = start.goal
        if start.issue is not None:
            changes["name"] = f"{self.spec.name}-issue-{start.issue}"
            changes["progress"] = None  # progress/NAME-issue-N.md: a loop of its own
        if start.branch is not None and start.commit is not None:
            changes["name"] = f"{self.spec.name}-push-{branch_slug(start.branch)}"
            changes["progress"] = None
            changes["goal"] = (f"{self.spec.goal}\n\n(the branch {start.branch}, as pushed at "
                               f"{start.commit[:12]})")  # fmt: skip
            if self.spec.github is not None and self.spec.github.base is None:
                changes["github"] = {**self.spec.github.model_dump(), "base": start.branch}
        return self.spec.with_changes(**changes) if changes else self.spec

    def _fetch(self, spec: LoopSpec, start: Start) -> None:
        """Bring a pushed branch's commit into the repository the loop works in."""
        if start.branch is None:
            return
        github = spec.github
        fetch_branch(spec.root / spec.workspace, github.remote if github else "origin",
                     start.branch,
                     token=os.environ.get(github.token_env) if github else None)  # fmt: skip

    def _run(self, spec: LoopSpec, start: Start, event: TriggerEvent, run_id: str) -> None:
        overrides = dataclasses.replace(
            self.overrides,
            earlier=start.earlier,
            issue=start.issue,
            start=start.commit,
        )
        redact = spec.redactor().redact_text
        try:
            self._fetch(spec, start)
            loop = recorded_loop(spec, overrides=overrides, run_id=run_id, tools=self.tools)
            loop.settings.events.emit(event)
            result = loop.run()
        except Exception as exc:  # noqa: BLE001 - one run's failure stops no other
            print(redact(f"{spec.name}: not run: {exc}"), file=self.out, flush=True)
            return
        print(f"{spec.name} (run {run_id}, {start.trigger}):", end=" ", file=self.out)
        if self.verdict is not None:
            self.verdict(result, quiet=False, redact=redact, out=self.out)
        else:
            print(redact(f"{result.stop_reason.value}: {result.message}"), file=self.out)
