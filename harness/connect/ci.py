"""Waiting for CI as a gate: a round that passed its checks is pushed, its pull request opened
(or updated), and the host's check runs on its commit decide; a failed check's log becomes the
next round's input."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.connect.config import CiConfig
from harness.connect.connectors import Host
from harness.connect.github import CheckRun, GitHub, HostError
from harness.core.event_schema import ConnectorEvent
from harness.core.sink import NULL_SINK, EventSink
from harness.core.text import truncate
from harness.outer.options import CiRound
from harness.verify.gates import GateReport

GATE_NAME = "ci"
GOOD = frozenset({"success", "neutral", "skipped"})


@dataclass
class CiWaiter:
    """The outer loop's ``ci``: publish the round, then wait for its check runs as ``config``
    (``[ci]``) says."""

    host: Host
    title: str
    config: CiConfig = field(default_factory=CiConfig)
    events: EventSink = NULL_SINK
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep

    def __call__(self, ci: CiRound) -> GateReport:
        started = self.clock()
        body = (f"Round {ci.round} (`{ci.commit[:12]}`) passed its gates; waiting for CI. "
                "The verdict replaces this text when the run ends.\n")  # fmt: skip
        try:
            client = self.host.client()
            # not a draft: the REST API cannot mark one ready once CI passes
            pull = self.host.publish(ci.repo, ci.branch, ci.origin, title=self.title, body=body,
                                     draft=False)  # fmt: skip
        except (HostError, OSError) as exc:
            self._event(False, str(exc))
            return GateReport(name=GATE_NAME, passed=False, duration=self.clock() - started,
                              summary=f"the round could not be published: {exc}")  # fmt: skip
        self._event(True, f"round {ci.round} on pull request #{pull.number} ({ci.commit[:12]})")
        timeout = self.config.timeout
        limit = timeout if ci.seconds_left is None else min(timeout, ci.seconds_left)
        return self._wait(client, ci.commit, started + limit, started)

    def _wait(self, client: GitHub, sha: str, deadline: float, started: float) -> GateReport:
        checks, poll, settle = self.config.checks, self.config.poll, self.config.settle
        while True:
            try:
                runs = [r for r in client.check_runs(sha) if not checks or r.name in checks]
            except HostError as exc:
                return GateReport(name=GATE_NAME, passed=False, summary=str(exc))
            missing = [name for name in checks if name not in {r.name for r in runs}]
            waiting = missing or not runs or any(r.status != "completed" for r in runs)
            now = self.clock()
            if not waiting:
                return self._verdict(client, runs, sha, now - started)
            if not runs and not checks and now - started >= settle:
                return GateReport(name=GATE_NAME, passed=False, duration=now - started,
                                  summary=f"no check run appeared on {sha[:12]} within "
                                  f"{settle:g}s: nothing was tested")  # fmt: skip
            if now + poll > deadline:
                pending = missing or [r.name for r in runs if r.status != "completed"]
                return GateReport(name=GATE_NAME, passed=False, duration=now - started,
                                  summary=f"checks not finished in time on {sha[:12]}: "
                                  + ", ".join(pending or ["none reported"]))  # fmt: skip
            self.sleep(poll)

    def _verdict(self, client: GitHub, runs: list[CheckRun], sha: str, took: float) -> GateReport:
        failed = [r for r in runs if r.conclusion not in GOOD]
        if not failed:
            return GateReport(name=GATE_NAME, passed=True, duration=took,
                              summary=f"{len(runs)} check run(s) passed on {sha[:12]}")  # fmt: skip
        logs = []
        for run in failed:
            log = client.job_log(run.id) or run.summary or "(no log)"
            logs.append(f"== {run.name}: {run.conclusion} ==\n{log.strip()}")
        tail = truncate("\n".join(logs), self.config.log_chars, head_share=0.2)
        return GateReport(
            name=GATE_NAME, passed=False, duration=took, failures=[r.name for r in failed],
            summary=f"{len(failed)} of {len(runs)} check run(s) failed on {sha[:12]}",
            output_tail=tail,
        )  # fmt: skip

    def _event(self, ok: bool, detail: str) -> None:
        self.events.emit(ConnectorEvent(connector="pull_request", occasion="round", ok=ok,
                                        detail=detail[:1000]))  # fmt: skip
