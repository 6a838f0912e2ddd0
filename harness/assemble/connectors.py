"""From loop.toml's ``[github]``, ``[[connectors]]`` and ``[ci]`` to the outer loop's
``on_finish`` and ``ci`` (see :mod:`harness.connect`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.connect.ci import CiWaiter
from harness.connect.connectors import (
    ArtifactConnector,
    Connector,
    Connectors,
    Host,
    IssueCommentConnector,
    PullRequestConnector,
    PushConnector,
    RunContext,
    WebhookConnector,
    pull_title,
)
from harness.connect.github import GitHub, GitHubConfig, env_value
from harness.core.sink import EventSink
from harness.spec.loop_spec import LoopSpec
from harness.spec.sections import (
    ArtifactConnectorConfig,
    ConnectorConfig,
    IssueCommentConnectorConfig,
    PullRequestConnectorConfig,
    PushConnectorConfig,
    WebhookConnectorConfig,
)


def build_connectors(
    config: LoopSpec,
    *,
    events: EventSink,
    redact: Callable[[str], str],
    issue: int | None = None,
) -> tuple[Connectors | None, CiWaiter | None]:
    """The loop's connectors (None without any) and its CI wait (None without ``[ci]``);
    ``redact`` is the run's redactor, which every text they send passes; ``issue`` is the issue
    the run came from."""
    host = host_of(config.github, redact) if config.github is not None else None
    context = RunContext(config.goal, config.name, config.root / config.workspace, issue)
    connectors = [_connector(entry, host, config.root, redact) for entry in config.connectors]
    finish = Connectors(tuple(connectors), context, events) if connectors else None
    ci = None
    if config.ci is not None:
        assert host is not None, "LoopSpec checks that [ci] has [github]"
        ci = CiWaiter(host, title=_title(config), config=config.ci, events=events)
    return finish, ci


def host_of(github: GitHubConfig, redact: Callable[[str], str]) -> Host:
    """The host ``[github]`` names; its client reads the token when first needed, and sends
    every text through ``redact``."""
    return Host(
        client=lambda: GitHub(
            github.repo,
            api_url=github.api_url,
            token=env_value(github.token_env, "github.token_env"),
            timeout=github.timeout,
            redact=redact,
        ),  # fmt: skip
        remote=github.remote,
        base=github.base,
        token_env=github.token_env,
    )


def _connector(
    entry: ConnectorConfig, host: Host | None, root: Path, redact: Callable[[str], str]
) -> Connector:
    on = tuple(entry.on)
    if isinstance(entry, ArtifactConnectorConfig):
        folder = root / Path(entry.folder).expanduser() if entry.folder else None
        return ArtifactConnector(entry.file, folder=folder, branch=entry.branch, on=on)
    if isinstance(entry, WebhookConnectorConfig):
        name = entry.url_env
        url = lambda: env_value(name, "url_env")  # noqa: E731 - read when the message goes
        return WebhookConnector(url, redact, timeout=entry.timeout, on=on)
    assert host is not None, "LoopSpec checks that these connectors have [github]"
    if isinstance(entry, PushConnectorConfig):
        return PushConnector(host, on=on)
    if isinstance(entry, PullRequestConnectorConfig):
        return PullRequestConnector(
            host, title=entry.title, draft_on_escalate=entry.draft_on_escalate, on=on
        )
    assert isinstance(entry, IssueCommentConnectorConfig)
    return IssueCommentConnector(host, issue=entry.issue, on=on)


def _title(config: LoopSpec) -> str:
    """The title the pull request connector gives, for the pull request the CI wait opens."""
    titles = [c.title for c in config.connectors if isinstance(c, PullRequestConnectorConfig)]
    return pull_title(config.goal, config.name, next((t for t in titles if t), None))
