"""Connectors: where a run's result goes when it ends — the run's branch pushed, its pull
request opened or updated, a comment on the issue it came from, a message to a webhook, an
artifact published.

:class:`Connectors` is the outer loop's ``on_finish``: each connector whose ``on`` names the
occasion (``pass`` or ``escalate``) runs in order; each outcome is a ``connector`` event and a
line of the result. A connector that fails is reported with its reason and never changes the
verdict.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from harness.connect.config import WEBHOOK_SECONDS, Occasion
from harness.connect.git_publish import commit_file, push_branch, show_file
from harness.connect.github import GitHub, HostError, PullRequest
from harness.core.atomic import atomic_write_text
from harness.core.event_schema import ConnectorEvent
from harness.core.sink import EventSink
from harness.outer.result import RunResult


@dataclass(frozen=True)
class Host:
    """The repository host and the git remote the run's branch goes to."""

    client: Callable[[], GitHub]  # made when first needed: a missing token fails that connector
    remote: str
    base: str | None = None  # the pull request's base; None: the branch the run started from
    token_env: str = "GITHUB_TOKEN"

    def publish(
        self, repo: Path, branch: str, origin: str | None, *, title: str, body: str, draft: bool
    ) -> PullRequest:
        """Push ``branch``, then open its pull request into ``base`` (else ``origin``, the branch
        the run started from), or replace the open one's title and body."""
        self.push(repo, branch)
        base = self.base or origin
        if base is None:
            raise HostError("no base branch: the run started on a detached HEAD; set github.base")
        client = self.client()
        found = client.find_pull(branch)
        if found is not None:
            return client.update_pull(found.number, title=title, body=body)
        return client.open_pull(head=branch, base=base, title=title, body=body, draft=draft)

    def push(self, repo: Path, branch: str) -> str:
        """Push ``branch``; its head commit."""
        return push_branch(repo, self.remote, branch, token=os.environ.get(self.token_env))


@dataclass(frozen=True)
class RunContext:
    """What the connectors know beside the result."""

    goal: str
    loop_name: str
    repo: Path  # a folder of the repository the run's branch is in
    issue: int | None = None  # the issue the run came from


class Connector(Protocol):
    @property
    def kind(self) -> str: ...

    @property
    def on(self) -> tuple[Occasion, ...]: ...

    def send(self, result: RunResult, context: RunContext) -> str:
        """Do the work; what was done (a URL, a commit). Raises on failure."""
        ...


def describe(result: RunResult, context: RunContext) -> str:
    """The Markdown a pull request, a comment or a message carries: verdict, gates, critic."""
    verdict = "passed" if result.passed else f"escalated ({result.stop_reason.value})"
    lines = [
        f"**harness** loop `{context.loop_name}`, run `{result.run_id}`: **{verdict}**",
        "",
        f"**Goal:** {_first_line(context.goal)}",
        f"**Verdict:** {result.stop_reason.value}: {_first_line(result.message)}",
        f"**Rounds:** {result.iterations}",
    ]
    if result.branch:
        lines.append(f"**Branch:** `{result.branch}`")
    last = result.rounds[-1] if result.rounds else None
    if last is not None:
        lines += ["", f"### Gates (round {last.round})", ""]
        gates = [f"- {'✅' if g.passed else '❌'} `{g.name}`: {g.summary}" for g in last.gates]
        lines += gates or ["- no gates"]
    verdicts = [r.verdict for r in result.rounds if r.verdict is not None]
    if verdicts:
        critic = verdicts[-1]
        lines += ["", f"### Critic: {critic.score:.1f}/10 ({'pass' if critic.passed else 'fail'})",
                  ""]  # fmt: skip
        lines += [f"- {reason}" for reason in critic.reasons]
        lines += [f"- Fix: {fix}" for fix in critic.fixes]
    if context.issue is not None:
        lines += ["", f"Refs #{context.issue}"]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class PushConnector:
    host: Host
    on: tuple[Occasion, ...] = ("pass",)
    kind: str = "push"

    def send(self, result: RunResult, context: RunContext) -> str:
        branch = _branch(result)
        head = self.host.push(context.repo, branch)
        return f"pushed {branch} ({head[:12]}) to {self.host.remote}"


@dataclass(frozen=True)
class PullRequestConnector:
    """Push the run's branch, then open its pull request, or update the open one."""

    host: Host
    title: str | None = None
    draft_on_escalate: bool = True
    on: tuple[Occasion, ...] = ("pass",)
    kind: str = "pull_request"

    def send(self, result: RunResult, context: RunContext) -> str:
        pull = self.host.publish(
            context.repo, _branch(result), result.origin,
            title=pull_title(context.goal, context.loop_name, self.title),
            body=describe(result, context), draft=self.draft_on_escalate and not result.passed,
        )  # fmt: skip
        return f"pull request #{pull.number} {pull.url}"


@dataclass(frozen=True)
class IssueCommentConnector:
    host: Host
    issue: int | None = None  # a fixed issue; None: the one the run came from
    on: tuple[Occasion, ...] = ("pass",)
    kind: str = "issue_comment"

    def send(self, result: RunResult, context: RunContext) -> str:
        issue = self.issue or context.issue
        if issue is None:
            raise HostError(
                "no issue to comment on: the run came from none (harness run --issue N)"
            )
        comment = self.host.client().comment(issue, describe(result, context))
        return f"commented on #{issue}: {comment}"


@dataclass(frozen=True)
class WebhookConnector:
    """POST ``{"text": ...}`` (Slack's incoming-webhook shape) to the URL in ``url()``."""

    url: Callable[[], str]
    redact: Callable[[str], str]  # the run's outbound redactor
    timeout: float = WEBHOOK_SECONDS
    on: tuple[Occasion, ...] = ("pass",)
    kind: str = "webhook"

    def send(self, result: RunResult, context: RunContext) -> str:
        payload = json.dumps({"text": self.redact(describe(result, context))}).encode()
        request = urllib.request.Request(self.url(), data=payload, method="POST")
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                status = response.status
        except urllib.error.HTTPError as exc:
            raise HostError(f"the webhook answered HTTP {exc.code}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise HostError(f"the webhook cannot be reached: {reason}") from None
        return f"message sent (HTTP {status})"


@dataclass(frozen=True)
class ArtifactConnector:
    """Publish ``file`` as the run's branch holds it: into ``folder``, or committed to ``branch``."""

    file: str
    folder: Path | None = None
    branch: str | None = None
    on: tuple[Occasion, ...] = ("pass",)
    kind: str = "artifact"

    def send(self, result: RunResult, context: RunContext) -> str:
        text = show_file(context.repo, f"refs/heads/{_branch(result)}", self.file)
        if self.folder is not None:
            target = self.folder / Path(self.file).name
            self.folder.mkdir(parents=True, exist_ok=True)
            atomic_write_text(target, text)
            return f"copied {self.file} to {target}"
        assert self.branch is not None, "the spec gives folder or branch"
        message = f"harness: publish {self.file} from run {result.run_id}"
        commit = commit_file(context.repo, self.branch, self.file, text, message)
        return f"committed {self.file} to {self.branch} ({commit[:12]})"


@dataclass(frozen=True, eq=False)
class Connectors:
    """The outer loop's ``on_finish``: every connector for the occasion, in order."""

    connectors: tuple[Connector, ...]
    context: RunContext
    events: EventSink

    def __call__(self, result: RunResult) -> tuple[str, ...]:
        occasion: Occasion = "pass" if result.passed else "escalate"
        lines = []
        for connector in self.connectors:
            if occasion not in connector.on:
                continue
            try:
                detail, ok = connector.send(result, self.context), True
            except (HostError, OSError) as exc:  # the reason says it all
                detail, ok = str(exc), False
            except Exception as exc:  # noqa: BLE001 - a connector never changes the verdict
                detail, ok = f"{type(exc).__name__}: {exc}", False
            self.events.emit(
                ConnectorEvent(
                    connector=connector.kind, occasion=occasion, ok=ok, detail=detail[:1000]
                )
            )
            lines.append(f"connector {connector.kind}: {'' if ok else 'FAILED: '}{detail}")
        return tuple(lines)


def _branch(result: RunResult) -> str:
    if not result.branch:
        raise HostError("the run has no branch of its own (isolation = 'none')")
    return result.branch


def pull_title(goal: str, loop_name: str, title: str | None = None) -> str:
    """A pull request's title: ``title``, else the goal's first line, else the loop's name."""
    return title or _first_line(goal)[:120] or loop_name


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0]
