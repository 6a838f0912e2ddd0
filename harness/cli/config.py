"""``loop.toml``: the declaration of one outer loop, validated with pydantic.

Relative paths in the file are relative to the folder that holds it.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.core.errors import ConfigError
from harness.core.redact import Redactor
from harness.core.validation import format_validation_error
from harness.engine.loop import MAX_ITERATIONS
from harness.sandbox.limits import Limits

CONFIG_NAME = "loop.toml"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PytestGateConfig(_Section):
    type: Literal["pytest"]
    args: str = ""
    timeout: float = Field(600, gt=0)


class CommandGateConfig(_Section):
    type: Literal["command"]
    cmd: str = Field(min_length=1)
    name: str | None = None
    timeout: float = Field(600, gt=0)


class ScriptGateConfig(_Section):
    """A Python predicate: ``module:function`` taking the workspace path."""

    type: Literal["python"]
    target: str = Field(pattern=r"^[\w.]+:\w+$")
    name: str | None = None


class HumanGateConfig(_Section):
    """A person approves each round the other gates and the critic passed."""

    type: Literal["human"]
    timeout: float = Field(3600, gt=0)  # seconds to wait for `harness approve`, then escalate
    interactive: bool | None = None  # None: ask inline when run on a terminal


_GATE_TYPES = ("pytest", "command", "python", "human")

GateConfig = Annotated[
    PytestGateConfig | CommandGateConfig | ScriptGateConfig | HumanGateConfig,
    Field(discriminator="type"),
]


class AgentConfig(_Section):
    max_steps: int = Field(50, ge=1, le=10_000)
    compaction: Literal["none", "summarize", "mask_observations"] = "mask_observations"
    compaction_threshold: float = Field(0.8, gt=0, le=1)
    context_window: int | None = Field(None, ge=1_000)  # override for unknown or local models
    system_prompt: str | None = None
    max_tokens: int | None = Field(None, ge=1)
    shell_timeout: float = Field(120, gt=0)


class CriticConfig(_Section):
    enabled: bool = True
    model: str | list[str] | None = None  # a list: the first whose provider is set up is used
    threshold: float | None = Field(None, ge=0, le=10)  # default: the skill's, else 8
    criteria: str | None = None
    artifact: Literal["diff", "final", "file"] = "diff"
    file: str | None = None


class BudgetConfig(_Section):
    tokens: int | None = Field(None, gt=0)
    cost_usd: float | None = Field(None, gt=0)
    seconds: float | None = Field(None, gt=0)


class RedactConfig(_Section):
    """``[redact]``: secrets to keep out of everything the run writes and prints."""

    patterns: list[str] = []  # regular expressions
    env: list[str] = []  # environment variables whose values are secret, whatever their names
    values_from: list[str] = []  # files (relative to loop.toml) holding one secret a line


class FleetConfig(_Section):
    """``[fleet]``: split the goal into subtasks, one loop each, and synthesise what passed."""

    subtasks: list[str] = []  # goals, one per subtask; or plan = true
    plan: bool = False  # the planner model splits the goal
    model: str | None = None  # planner and synthesiser (default: the author model)
    max_subtasks: int = Field(8, ge=1, le=100)
    concurrency: int = Field(4, ge=1, le=8)
    evaluate: list[GateConfig] = []  # checked on each passed subtask's branch before it is kept
    artifacts: list[str] = []  # files the synthesis reads (default: every file a subtask changed)
    synthesise: bool = True


class McpConfig(_Section):
    """One ``[[mcp]]`` server: ``command`` (stdio) or ``url`` (streamable HTTP)."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9-]*(_[A-Za-z0-9-]+)*$")
    command: list[str] | None = Field(None, min_length=1)
    url: str | None = Field(None, pattern=r"^https?://")
    env: dict[str, str] = {}
    cwd: str | None = None
    allow: list[str] | None = None
    deny: list[str] = []
    startup_timeout: float = Field(30, gt=0, le=600)
    call_timeout: float = Field(60, gt=0, le=3600)


class WebSearchConfig(_Section):
    """``[web.search]``: gives the agent ``web_search`` through a provider's HTTP API."""

    provider: Literal["brave"] = "brave"
    api_key_env: str = Field("BRAVE_API_KEY", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    endpoint: str = Field("https://api.search.brave.com/res/v1/web/search", pattern=r"^https?://")
    max_results: int = Field(5, ge=1, le=20)
    timeout: float = Field(20, gt=0, le=600)


class WebConfig(_Section):
    """``[web]``: ``fetch_url`` for ``allow_domains`` (their subdomains too), ``web_search``."""

    allow_domains: list[str] | None = Field(None, min_length=1)
    max_bytes: int = Field(2_000_000, ge=1, le=100_000_000)
    timeout: float = Field(20, gt=0, le=600)
    search: WebSearchConfig | None = None


class SandboxConfig(_Section):
    """``[sandbox]``: where the agent's commands and the gates run (see harness.Sandbox)."""

    backend: Literal["auto", "bwrap", "none", "docker", "podman"] = "auto"
    image: str | None = Field(None, min_length=1)  # docker and podman: the container's image
    network: bool = False
    env: list[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]] = []
    readonly: list[Annotated[str, Field(min_length=1)]] = []  # shown read-only (~ expanded)
    limits: Limits = Limits()


class HooksConfig(_Section):
    """``[hooks]``: what the ``on_round`` and ``on_escalate`` commands get inside the sandbox."""

    env: list[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]] = []
    network: bool | None = None  # None: as [sandbox] network


class LoopConfig(_Section):
    """The whole of ``loop.toml``."""

    goal: str = Field(min_length=1)
    name: str = Field("loop", pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    model: str | None = None
    model_options: dict[str, str | int | float | bool | list[str]] = {}  # passed to litellm
    workspace: str = "."
    skill: str | None = None
    progress: str | None = None
    checklist: list[str] = []
    max_iterations: int = Field(10, ge=1, le=MAX_ITERATIONS)
    attempts: int = Field(1, ge=1, le=8)  # best-of-N: independent attempts, the best one kept
    isolation: Literal["auto", "worktree", "branch", "none"] = "auto"  # auto: worktree in git
    rollback: Literal["keep", "failed"] = "keep"
    merge: bool = False
    protect: list[str] | None = None
    patience: int = Field(3, ge=2, le=100)
    on_escalate: str | None = None
    on_round: str | None = Field(None, min_length=1)  # command told of every round
    hooks: HooksConfig = HooksConfig()
    redact: list[str] | RedactConfig = []  # a list of regexes, or the [redact] table
    agent: AgentConfig = AgentConfig()
    critic: CriticConfig = CriticConfig()
    budget: BudgetConfig = BudgetConfig()
    gates: list[GateConfig] = []
    fleet: FleetConfig | None = None
    mcp: list[McpConfig] = []
    web: WebConfig | None = None

    sandbox: SandboxConfig = SandboxConfig()

    def progress_path(self, root: Path) -> Path:
        return root / (self.progress or f"progress/{self.name}.md")

    def redactor(self, root: Path) -> Redactor:
        """The run's redactor: ``[redact]`` on top of the secrets found by default."""
        if isinstance(self.redact, list):
            return Redactor(self.redact)
        values: list[str] = []
        for index, name in enumerate(self.redact.values_from):
            try:
                text = (root / name).read_text(encoding="utf-8")
            except OSError as exc:
                raise ConfigError(
                    f"field 'redact.values_from[{index}]': cannot read {root / name}: "
                    f"{exc.strerror}"
                ) from exc
            values.extend(line.strip() for line in text.splitlines() if line.strip())
        return Redactor(self.redact.patterns, secret_env=self.redact.env, values=values)


def find_config(path: str | Path) -> Path:
    """``path`` itself if it is a file, else ``path/loop.toml``."""
    path = Path(path)
    candidate = path / CONFIG_NAME if path.is_dir() else path
    if not candidate.is_file():
        raise ConfigError(
            f"{candidate}: no such file (expected a {CONFIG_NAME} or a folder holding one)"
        )
    return candidate


def load_config(path: str | Path) -> tuple[LoopConfig, Path]:
    """The validated config and the folder its relative paths start from."""
    file = find_config(path)
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file}: not valid TOML: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{file}: not UTF-8 text (byte {exc.start} is {exc.object[exc.start]:#04x}); "
            "save it as UTF-8"
        ) from None
    except RecursionError:
        raise ConfigError(f"{file}: nested too deeply to read") from None
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read: {exc.strerror}") from exc
    try:
        config = LoopConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(
            format_validation_error(file, exc, union_tags={"gates": _GATE_TYPES})
        ) from None
    problems = [f"{file}: field '{field}': {message}" for field, message in _cross_checks(config)]
    if problems:
        raise ConfigError("\n".join(problems))
    return config, file.parent.resolve()


def _cross_checks(config: LoopConfig) -> list[tuple[str, str]]:
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
    problems.extend(_mcp_checks(config.mcp))
    engine = config.sandbox.backend in ("docker", "podman")
    if engine and config.sandbox.image is None:
        problems.append(("sandbox.image", f"required when backend = '{config.sandbox.backend}'"))
    if not engine and config.sandbox.image is not None:
        problems.append(("sandbox.image", "only the docker and podman backends use an image"))
    if config.web is not None and config.web.allow_domains is None and config.web.search is None:
        problems.append(("web", "give allow_domains (for fetch_url), [web.search], or both"))
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
