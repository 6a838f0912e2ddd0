"""The sections of a loop's specification: gates, agent, critic, budget, sandbox, MCP servers...

Each is a frozen pydantic model that rejects unknown fields, so a typo in loop.toml is named.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from harness.connect.config import WEBHOOK_SECONDS, Occasion
from harness.connect.reviews import LOGIN
from harness.connect.triggers import MAX_CONNECTIONS, READ_TIMEOUT
from harness.core.section import Section
from harness.engine.foreach import Concurrency
from harness.research.gate_config import CitationsGateConfig, ConvergenceGateConfig
from harness.sandbox.command_env import EnvName
from harness.sandbox.limits import Limits
from harness.sandbox.sandbox import Backend
from harness.verify.gate_config import (
    CommandGateConfig,
    HumanGateConfig,
    PytestGateConfig,
    ReproductionGateConfig,
    ScriptGateConfig,
)

GateConfig = Annotated[
    PytestGateConfig
    | CommandGateConfig
    | ScriptGateConfig
    | HumanGateConfig
    | CitationsGateConfig
    | ConvergenceGateConfig
    | ReproductionGateConfig,
    Field(discriminator="type"),
]


class RedactConfig(Section):
    """``[redact]``: secrets to keep out of everything the run writes and prints."""

    patterns: list[str] = []  # regular expressions
    env: list[str] = []  # environment variables whose values are secret, whatever their names
    values_from: list[str] = []  # files (relative to loop.toml) holding one secret a line


class FleetConfig(Section):
    """``[fleet]``: split the goal into subtasks, one loop each, and synthesise what passed."""

    subtasks: list[str] = []  # goals, one per subtask; or plan = true
    plan: bool = False  # the planner model splits the goal
    model: str | None = None  # planner and synthesiser (default: the author model)
    max_subtasks: int = Field(8, ge=1, le=100)
    concurrency: Concurrency = 4  # loops at once
    evaluate: list[GateConfig] = []  # checked on each passed subtask's branch before it is kept
    artifacts: list[str] = []  # files the synthesis reads (default: every file a subtask changed)
    synthesise: bool = True
    backend: Literal["local", "ray"] = "local"  # where the subtasks' loops run
    ray_address: str | None = None  # a Ray cluster to join (default: RAY_ADDRESS, else a new one)


class SandboxConfig(Section):
    """``[sandbox]``: where the agent's commands and the gates run (see harness.Sandbox)."""

    backend: Backend = "auto"
    image: str | None = Field(None, min_length=1)  # docker and podman: the container's image
    # docker and podman: where the image expects the workspace (/testbed); None: its own path
    workdir: str | None = Field(None, pattern=r"^/[^\x00]*[^/\x00]$")
    keep: bool = False  # docker and podman: the agent's commands share one long-lived container
    image_python: str | None = Field(None, min_length=1)  # docker and podman: default python3
    network: bool = False
    env: list[EnvName] = []
    readonly: list[Annotated[str, Field(min_length=1)]] = []  # shown read-only (~ expanded)
    limits: Limits = Limits()


class EnvConfig(Section):
    """``[env]``: the project's Python environment, where the gates and the agent's commands run.

    Without ``python`` or ``setup``, an active ``VIRTUAL_ENV`` or a ``.venv`` at the loop's or
    the repository's root is used (``detect = false``: the harness's own Python).
    """

    python: str | None = Field(None, min_length=1)  # an interpreter: a path (~, relative) or name
    setup: str | None = Field(None, min_length=1)  # made into a fresh venv once per base commit
    # the commit setup runs at instead of the run's start (a benchmark's environment commit)
    commit: str | None = Field(None, pattern=r"^[0-9a-f]{7,64}$")
    setup_timeout: float = Field(1800, gt=0)  # seconds the set-up command may take
    detect: bool = True


class HooksConfig(Section):
    """``[hooks]``: what the ``on_round`` and ``on_escalate`` commands get inside the sandbox."""

    env: list[EnvName] = []
    network: bool | None = None  # None: as [sandbox] network


class ConnectorBase(Section):
    on: list[Occasion] = Field(["pass"], min_length=1)  # when it runs


class PushConnectorConfig(ConnectorBase):
    """Push the run's branch to ``[github] remote``."""

    type: Literal["push"]


class PullRequestConnectorConfig(ConnectorBase):
    """Push the run's branch and open (or update) its pull request; needs ``[github]``."""

    type: Literal["pull_request"]
    title: str | None = Field(None, min_length=1)  # default: the goal's first line
    draft_on_escalate: bool = True


class IssueCommentConnectorConfig(ConnectorBase):
    """Comment on the originating issue (``--issue N``, or the issue that triggered the run)."""

    type: Literal["issue_comment"]
    issue: int | None = Field(None, ge=1)  # a fixed issue instead of the originating one


class WebhookConnectorConfig(ConnectorBase):
    """POST a Slack-compatible message (``{"text": ...}``) to the URL held in ``url_env``."""

    type: Literal["webhook"]
    url_env: EnvName  # a webhook URL is a secret: it is read from the environment
    timeout: float = Field(WEBHOOK_SECONDS, gt=0, le=600)


class ArtifactConnectorConfig(ConnectorBase):
    """Publish ``file`` as the run's branch holds it: copy it into ``folder``, or commit it to
    ``branch`` (created if missing)."""

    type: Literal["artifact"]
    file: str = Field(min_length=1)  # relative to the repository's root
    folder: str | None = Field(None, min_length=1)  # relative to loop.toml unless absolute
    branch: str | None = Field(None, min_length=1)


ConnectorConfig = Annotated[
    PushConnectorConfig
    | PullRequestConnectorConfig
    | IssueCommentConnectorConfig
    | WebhookConnectorConfig
    | ArtifactConnectorConfig,
    Field(discriminator="type"),
]


class ScheduleTriggerConfig(Section):
    """Start the loop on a cron schedule (five fields, UTC)."""

    type: Literal["schedule"]
    cron: str = Field(min_length=1)
    fresh: bool = False  # start over each time, not carrying what earlier runs learned

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str) -> str:
        from croniter import croniter

        if len(value.split()) != 5 or not croniter.is_valid(value):
            raise ValueError(f"{value!r} is not a cron schedule of five fields (m h dom mon dow)")
        return value


class IssuesTriggerConfig(Section):
    """Start a loop for each open issue carrying ``label`` (polling ``[github]``)."""

    type: Literal["issues"]
    label: str = Field("harness", min_length=1)
    poll: float = Field(60, ge=1)  # seconds between looks


class ReviewersConfig(Section):
    """Whose reviews and comments on the loop's own pull requests feed its next round."""

    reviewers: list[Annotated[str, Field(pattern=rf"^{LOGIN.pattern}$")]] = []  # GitHub logins
    handle: str = Field("@harness", pattern=r"^@[A-Za-z0-9][A-Za-z0-9-]{0,38}$")  # a comment's cue


class ReviewsTriggerConfig(ReviewersConfig):
    """Look for reviews of the loop's own pull requests on ``[github]``."""

    type: Literal["reviews"]
    poll: float = Field(60, ge=1)  # seconds between looks


class WebhookTriggerConfig(ReviewersConfig):
    """Start loops from signed webhook deliveries (GitHub's ``X-Hub-Signature-256``)."""

    type: Literal["webhook"]
    host: str = "127.0.0.1"
    port: int = Field(8787, ge=0, le=65535)
    secret_env: EnvName = "HARNESS_WEBHOOK_SECRET"
    label: str = Field("harness", min_length=1)  # an issue event starts a loop with this label
    branches: list[str] = []  # patterns (fnmatch) of branches whose pushes start a loop each
    timeout: float = Field(READ_TIMEOUT, gt=0, le=300)  # seconds a connection may stay silent
    max_connections: int = Field(MAX_CONNECTIONS, ge=1, le=1024)  # one more is answered 503
    fresh: bool = False  # a push or a goal starts over, not carrying what earlier runs learned


TriggerConfig = Annotated[
    ScheduleTriggerConfig | IssuesTriggerConfig | WebhookTriggerConfig | ReviewsTriggerConfig,
    Field(discriminator="type"),
]
