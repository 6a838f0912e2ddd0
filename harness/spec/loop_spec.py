"""``LoopSpec``: the one definition of an outer loop, as loop.toml declares it or Python builds it.

Relative paths in a spec are relative to its :attr:`LoopSpec.root`: the folder of the loop.toml it
was read from, else the current folder. :func:`harness.assemble.build.build_loop` turns a spec into a
ready :class:`~harness.outer.loop.OuterLoop`.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, get_args

from pydantic import Field, PrivateAttr, ValidationError, model_validator

from harness.agent.actions import ActionHookConfig
from harness.agent.config import AgentConfig
from harness.agent.subagent import SubagentsConfig
from harness.connect.config import CiConfig
from harness.connect.github import GitHubConfig
from harness.core.errors import ConfigError
from harness.core.redact import Redactor, env_file_values
from harness.core.section import Section
from harness.core.validation import format_validation_error
from harness.engine.foreach import Concurrency
from harness.memory.skill import Skill
from harness.outer.rules import LoopRules
from harness.research.web import WebConfig
from harness.spec.outline import find_config, progress_path, read_toml
from harness.spec.sections import (
    ArtifactConnectorConfig,
    ConnectorConfig,
    EnvConfig,
    FleetConfig,
    GateConfig,
    HooksConfig,
    IssueCommentConnectorConfig,
    IssuesTriggerConfig,
    PullRequestConnectorConfig,
    PushConnectorConfig,
    RedactConfig,
    ReviewsTriggerConfig,
    SandboxConfig,
    TriggerConfig,
    WebhookConnectorConfig,
    WebhookTriggerConfig,
)
from harness.tools.mcp_server import McpConfig
from harness.tools.permissions import Permissions
from harness.verify.critic_config import CriticConfig
from harness.verify.gate_config import HeldOutConfig


def _tags(union: object) -> tuple[str, ...]:
    """The ``type`` each section of a tagged union (``GateConfig``) takes."""
    members = get_args(get_args(union)[0])
    return tuple(tag for m in members for tag in get_args(m.model_fields["type"].annotation))


UNION_TAGS = {
    "gates": _tags(GateConfig),
    "evaluate": _tags(GateConfig),  # [fleet]'s
    "connectors": _tags(ConnectorConfig),
    "triggers": _tags(TriggerConfig),
}
"""The lists of tagged unions, by field: pydantic puts a section's tag in an error's location
(``gates.0.pytest.timeout``), though it is no field."""


class LoopSpec(LoopRules, Section):
    """The whole of a loop: ``LoopSpec.from_toml(path)``, or built in Python.

    The loop's rules (its name, protected paths, patience, rollback, merge...) are the fields of
    :class:`~harness.outer.rules.LoopRules`, which :class:`~harness.outer.settings.Settings`
    extends too.
    """

    goal: str = Field(min_length=1)
    model: str | None = None
    model_options: dict[str, str | int | float | bool | list[str]] = {}  # passed to litellm
    workspace: str = "."
    skill: str | None = None
    progress: str | None = None
    # best-of-N: independent attempts, at once, the best one kept
    attempts: Concurrency = 1
    on_escalate: str | None = None
    on_round: str | None = Field(None, min_length=1)  # command told of every round
    hooks: HooksConfig = HooksConfig()
    redact: list[str] | RedactConfig = []  # a list of regexes, or the [redact] table
    agent: AgentConfig = AgentConfig()
    critic: CriticConfig = CriticConfig()
    gates: list[GateConfig] = []
    fleet: FleetConfig | None = None
    mcp: list[McpConfig] = []
    web: WebConfig | None = None
    github: GitHubConfig | None = None
    connectors: list[ConnectorConfig] = []  # where a pass or an escalation is reflected
    ci: CiConfig | None = None  # wait for the host's check runs on each passing round
    triggers: list[TriggerConfig] = []  # what starts the loop under `harness watch`

    sandbox: SandboxConfig = SandboxConfig()
    env: EnvConfig = EnvConfig()
    permissions: Permissions = Permissions()
    action_hooks: list[ActionHookConfig] = []
    subagents: SubagentsConfig | None = None

    _root: Path | None = PrivateAttr(None)
    _file: Path | None = PrivateAttr(None)

    @classmethod
    def from_toml(cls, path: str | Path) -> LoopSpec:
        """The spec in ``path`` (a loop.toml, or a folder holding one); errors name file and field."""
        file = find_config(path)
        spec = cls._validated(read_toml(file), file)
        spec._root, spec._file = file.parent.resolve(), file
        return spec

    @classmethod
    def _validated(cls, data: dict[str, Any], source: Path | str) -> LoopSpec:
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(
                format_validation_error(source, exc, union_tags=UNION_TAGS, fields=cls.model_fields)
            ) from None

    @model_validator(mode="after")
    def _fields_agree(self) -> LoopSpec:
        """Rules that tie fields together; each problem on a line of its own."""
        problems = [f"field '{field}': {problem}" for field, problem in _cross_checks(self)]
        if problems:
            raise ValueError("\n".join(problems))
        return self

    @property
    def root(self) -> Path:
        """Where relative paths start: the loop.toml's folder, else the current folder."""
        return self._root if self._root is not None else Path.cwd()

    @property
    def source(self) -> Path | str:
        """What errors about this spec name: its loop.toml, else ``LoopSpec``."""
        return self._file if self._file is not None else "LoopSpec"

    def with_changes(self, **changes: Any) -> LoopSpec:
        """A copy with ``changes``, validated again, from the same root."""
        spec = self._validated({**self.model_dump(), **changes}, self.source)
        spec._root, spec._file = self._root, self._file
        return spec

    def with_runner(self, runner: str) -> LoopSpec:
        """A copy whose rounds' sessions ``runner`` runs, checked again with the file's other
        fields (runner ``command`` needs ``[agent] command``)."""
        return self.with_changes(agent={**self.agent.model_dump(), "runner": runner})

    def load_skill(self) -> Skill | None:
        """The loop's SKILL.md; an error names the ``skill`` field."""
        if not self.skill:
            return None
        try:
            return Skill.load(self.root / self.skill)
        except ConfigError as exc:
            raise ConfigError(f"field 'skill': {exc}") from exc

    def progress_path(self) -> Path:
        return progress_path(self.root, self.name, self.progress)

    def redactor(self) -> Redactor:
        """The run's redactor: ``[redact]`` on top of the secrets found by default, and the values
        of the ``.env`` files at the loop's folder and its workspace."""
        secret_env = self.secret_env()
        values = self._env_file_values()
        if isinstance(self.redact, list):
            return Redactor(self.redact, secret_env=secret_env, values=values)
        root = self.root
        for index, name in enumerate(self.redact.values_from):
            try:
                text = (root / name).read_text(encoding="utf-8")
            except OSError as exc:
                raise ConfigError(
                    f"field 'redact.values_from[{index}]': cannot read {root / name}: "
                    f"{exc.strerror}"
                ) from exc
            values.extend(line.strip() for line in text.splitlines() if line.strip())
        return Redactor(
            self.redact.patterns, secret_env=[*self.redact.env, *secret_env], values=values
        )

    def _env_file_values(self) -> list[str]:
        values: list[str] = []
        for folder in dict.fromkeys([self.root, (self.root / self.workspace).resolve()]):
            # none there: no values; a link to a shared file is followed
            with (
                contextlib.suppress(OSError, UnicodeDecodeError),
                (folder / ".env").open("rb") as f,
            ):
                values += env_file_values(f.read(1 << 20).decode("utf-8"))
        return values

    def secret_env(self) -> list[str]:
        """The environment variables the connectors and triggers read secrets from."""
        names = [self.github.token_env] if self.github is not None else []
        names += [c.url_env for c in self.connectors if isinstance(c, WebhookConnectorConfig)]
        names += [t.secret_env for t in self.triggers if isinstance(t, WebhookTriggerConfig)]
        return names


def _cross_checks(config: LoopSpec) -> list[tuple[str, str]]:
    """Rules that tie fields together, as (field, problem)."""
    problems = []
    if config.critic.artifact == "file" and not config.critic.file:
        problems.append(("critic.file", "required when critic.artifact = 'file'"))
    if not config.gates and not config.critic.enabled:
        problems.append(
            ("gates", "give at least one gate or enable the critic; nothing else can pass a round")
        )
    if config.fleet is not None and bool(config.fleet.subtasks) == config.fleet.plan:
        problems.append(("fleet", "give subtasks = [...] or plan = true, not both"))
    if config.fleet is not None and config.attempts > 1:
        problems.append(("attempts", "a fleet runs one loop per subtask; attempts must be 1"))
    if config.attempts > 1 and config.merge:
        problems.append(("merge", "cannot merge with attempts > 1; the winner's branch is named"))
    for index, gate in enumerate(config.gates):
        if not isinstance(gate, HeldOutConfig):
            continue
        if gate.feedback != "pass_fail" and gate.held_out is None:
            problems.append((f"gates[{index}].feedback", "applies to a held_out gate only"))
    problems.extend(_mcp_checks(config.mcp))
    problems.extend(_connector_checks(config))
    problems.extend(_engine_checks(config))
    problems.extend(_runner_checks(config))
    if config.model is not None and config.agent.models is not None:
        problems.append(("agent.models", "a cascade replaces the top-level model: give one"))
    if config.env.commit is not None and config.env.setup is None:
        problems.append(("env.commit", "the commit a set-up runs at: give [env] setup too"))
    if config.web is not None and config.web.allow_domains is None and config.web.search is None:
        problems.append(("web", "give allow_domains (for fetch_url), [web.search], or both"))
    return problems


def _runner_checks(config: LoopSpec) -> list[tuple[str, str]]:
    """What the runner named in ``[agent]`` needs. ``command`` and ``path`` are read only by the
    runners that use them: one loop.toml may keep both for ``--runner`` to choose."""
    agent, problems = config.agent, []
    if agent.runner == "command" and agent.command is None:
        problems.append(("agent.command", "required when agent.runner = 'command'"))
    if agent.runner != "harness" and config.mcp:
        problems.append(
            ("mcp", f"runner {agent.runner!r} cannot use the loop's MCP servers' tools")
        )
    return problems


def _engine_checks(config: LoopSpec) -> list[tuple[str, str]]:
    """What only the docker and podman backends take, and what they need."""
    problems = []
    sandbox = config.sandbox
    engine = sandbox.backend in ("docker", "podman")
    if engine and sandbox.image is None:
        problems.append(("sandbox.image", f"required when backend = '{sandbox.backend}'"))
    if not engine and sandbox.image is not None:
        problems.append(("sandbox.image", "only the docker and podman backends use an image"))
    if not engine and sandbox.workdir is not None:
        problems.append(("sandbox.workdir", "only the docker and podman backends mount one"))
    if not engine and sandbox.keep:
        problems.append(("sandbox.keep", "only the docker and podman backends keep a container"))
    if not engine and sandbox.image_python is not None:
        problems.append(("sandbox.image_python", "only the docker and podman backends use one"))
    if engine and (config.env.python or config.env.setup):
        problems.append(("env", "the docker and podman backends run the image's Python"))
    return problems


def _mcp_checks(servers: list[McpConfig]) -> list[tuple[str, str]]:
    problems = []
    seen: set[str] = set()
    for index, server in enumerate(servers):
        where = f"mcp[{index}]"
        if (server.command is None) == (server.url is None):
            problems.append((where, "give either command (stdio) or url (streamable HTTP)"))
        if server.url is not None and (server.env or server.cwd):
            problems.append((where, "env and cwd apply to a command, not to a url"))
        if server.name in seen:
            problems.append((f"{where}.name", f"{server.name!r} is used by an earlier server"))
        seen.add(server.name)
    return problems


def _connector_checks(config: LoopSpec) -> list[tuple[str, str]]:
    """The host's connectors, ``[ci]`` and the issue trigger need ``[github]``; an artifact
    goes to a folder or a branch."""
    problems = []
    hosted = (PushConnectorConfig, PullRequestConnectorConfig, IssueCommentConnectorConfig)
    if config.github is None:
        for index, connector in enumerate(config.connectors):
            if isinstance(connector, hosted):
                problems.append((f"connectors[{index}]", f"{connector.type} needs [github]"))
        if config.ci is not None:
            problems.append(("ci", "waiting for check runs needs [github]"))
        for index, trigger in enumerate(config.triggers):
            if isinstance(trigger, IssuesTriggerConfig):
                problems.append((f"triggers[{index}]", "the issues trigger needs [github]"))
    for index, connector in enumerate(config.connectors):
        if isinstance(connector, ArtifactConnectorConfig):
            given = (connector.folder is not None) + (connector.branch is not None)
            if given != 1:
                said = "neither is given" if given == 0 else "not both"
                problems.append((f"connectors[{index}]", f"give folder or branch: {said}"))
    if config.ci is not None and config.isolation == "none":
        problems.append(("ci", "needs the run's own branch (isolation other than 'none')"))
    for index, trigger in enumerate(config.triggers):
        reviewed = isinstance(trigger, ReviewsTriggerConfig) or (
            isinstance(trigger, WebhookTriggerConfig) and trigger.reviewers
        )
        if reviewed and (config.github is None or config.isolation == "none"):
            problems.append((f"triggers[{index}].reviewers",
                             "reviews of the loop's pull requests need [github] and the run's "
                             "own branch (isolation other than 'none')"))  # fmt: skip
        pushed = isinstance(trigger, WebhookTriggerConfig) and trigger.branches
        if pushed and config.isolation == "none":
            problems.append((f"triggers[{index}].branches",
                             "a pushed branch is worked on in a branch of the run's own "
                             "(isolation other than 'none')"))  # fmt: skip
    return problems
