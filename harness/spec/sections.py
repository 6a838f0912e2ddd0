"""The sections of a loop's specification: gates, agent, critic, budget, sandbox, MCP servers...

Each is a frozen pydantic model that rejects unknown fields, so a typo in loop.toml is named.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.sandbox.limits import Limits


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)  # finite bounds


class HeldOutConfig(Section):
    """A gate that may judge with held-out files: a folder (relative to loop.toml, outside the
    workspace) laid over a copy of the round's checkout only, never shown to the agent."""

    held_out: str | None = Field(None, min_length=1)
    feedback: Literal["none", "pass_fail", "ids"] = "pass_fail"  # what the agent is told


class PytestGateConfig(HeldOutConfig):
    type: Literal["pytest"]
    args: str = ""
    timeout: float = Field(600, gt=0)


class CommandGateConfig(HeldOutConfig):
    type: Literal["command"]
    cmd: str = Field(min_length=1)
    name: str | None = None
    timeout: float = Field(600, gt=0)


class ScriptGateConfig(Section):
    """A Python predicate: ``module:function`` taking the workspace path."""

    type: Literal["python"]
    target: str = Field(pattern=r"^[\w.]+:\w+$")
    name: str | None = None


class HumanGateConfig(Section):
    """A person approves each round the other gates and the critic passed."""

    type: Literal["human"]
    timeout: float = Field(3600, gt=0)  # seconds to wait for `harness approve`, then escalate
    interactive: bool | None = None  # None: ask inline when run on a terminal


class CitationsGateConfig(Section):
    """Every quote in ``file`` found in the source it cites: a file in ``sources`` (a folder of
    the workspace) or a source fetched in this run (its id or address)."""

    type: Literal["citations"]
    file: str = Field(min_length=1)
    sources: str | None = Field(None, min_length=1)
    min_sources: int = Field(1, ge=0)  # distinct sources with a verified quote
    require_contradictions: bool = False  # a non-empty "## Contradictions" section
    name: str = Field("citations", min_length=1)


class ConvergenceGateConfig(Section):
    """The claims in ``file`` unchanged for ``stable_rounds`` rounds, each key claim backed by
    ``min_sources`` independent sources that do not disagree."""

    type: Literal["convergence"]
    file: str = Field(min_length=1)
    sources: str | None = Field(None, min_length=1)
    stable_rounds: int = Field(2, ge=1, le=100)
    min_sources: int = Field(2, ge=1)
    name: str = Field("convergence", min_length=1)


GATE_TYPES = ("pytest", "command", "python", "human", "citations", "convergence")

GateConfig = Annotated[
    PytestGateConfig
    | CommandGateConfig
    | ScriptGateConfig
    | HumanGateConfig
    | CitationsGateConfig
    | ConvergenceGateConfig,
    Field(discriminator="type"),
]


class AgentConfig(Section):
    max_steps: int = Field(50, ge=1, le=10_000)
    compaction: Literal["none", "summarize", "mask_observations"] = "mask_observations"
    compaction_threshold: float = Field(0.8, gt=0, le=1)
    context_window: int | None = Field(None, ge=1_000)  # override for unknown or local models
    system_prompt: str | None = None
    max_tokens: int | None = Field(None, ge=1)
    shell_timeout: float = Field(120, gt=0)


class CriticConfig(Section):
    enabled: bool = True
    model: str | list[str] | None = None  # a list: the first whose provider is set up is used
    threshold: float | None = Field(None, ge=0, le=10)  # default: the skill's, else 8
    criteria: str | None = None
    artifact: Literal["diff", "final", "file"] = "diff"
    file: str | None = None


class BudgetConfig(Section):
    tokens: int | None = Field(None, gt=0)
    cost_usd: float | None = Field(None, gt=0)
    seconds: float | None = Field(None, gt=0)


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
    concurrency: int = Field(4, ge=1, le=8)
    evaluate: list[GateConfig] = []  # checked on each passed subtask's branch before it is kept
    artifacts: list[str] = []  # files the synthesis reads (default: every file a subtask changed)
    synthesise: bool = True


class McpConfig(Section):
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


class WebSearchConfig(Section):
    """``[web.search]``: gives the agent ``web_search`` through a provider's HTTP API."""

    provider: Literal["brave", "searxng"] = "brave"
    # None: the provider's own (brave: BRAVE_API_KEY; searxng: no key)
    api_key_env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    # None: the provider's own (brave: its API; searxng has none: name the instance's /search)
    endpoint: str | None = Field(None, pattern=r"^https?://")
    max_results: int = Field(5, ge=1, le=20)
    timeout: float = Field(20, gt=0, le=600)


class WebConfig(Section):
    """``[web]``: ``fetch_url`` for ``allow_domains`` (their subdomains too), ``web_search``."""

    allow_domains: list[str] | None = Field(None, min_length=1)
    max_bytes: int = Field(2_000_000, ge=1, le=100_000_000)
    timeout: float = Field(20, gt=0, le=600)
    search: WebSearchConfig | None = None
    replay: str | None = Field(None, min_length=1)  # an archive folder: fetch_url reads it only


class SandboxConfig(Section):
    """``[sandbox]``: where the agent's commands and the gates run (see harness.Sandbox)."""

    backend: Literal["auto", "bwrap", "none", "docker", "podman"] = "auto"
    image: str | None = Field(None, min_length=1)  # docker and podman: the container's image
    network: bool = False
    env: list[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]] = []
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

    env: list[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]] = []
    network: bool | None = None  # None: as [sandbox] network
