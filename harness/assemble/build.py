"""From a :class:`~harness.spec.loop_spec.LoopSpec` to a ready :class:`OuterLoop`."""

from __future__ import annotations

import importlib
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from harness.agent.agent import Agent
from harness.agent.session import Session
from harness.assemble import session
from harness.assemble.build_critic import unchecked_critic
from harness.assemble.connectors import build_connectors
from harness.assemble.env_setup import project_env
from harness.assemble.named_models import (
    MODEL_ENV,
    Overrides,
    author_name,
    cascade_of,
    overridable,
    override_source,
    preflighted,
    profile_model,
    spec_model,
)
from harness.assemble.pinning import check_gate_modules, check_unchanged, pins_of
from harness.assemble.runner import external_runner
from harness.core.errors import ConfigError, MissingExtra
from harness.core.sink import EventSink
from harness.models.base import Model
from harness.observe.run_summary import RUNS_DIR
from harness.outer.loop import OuterLoop
from harness.outer.options import ArtifactFile, CriticArtifact, ResumeHook, new_run_id
from harness.outer.rules import LoopRules
from harness.research.archive import ARCHIVE_DIR, INDEX_FILE, SourceArchive
from harness.research.claim_ledger import LEDGER_FILE
from harness.research.gate_config import CitationsGateConfig, ConvergenceGateConfig
from harness.research.gates import citations_gate, convergence_gate
from harness.research.resume import carry_on_resume
from harness.research.web import check_domains, fetch_url_tool, read_source_tool
from harness.research.web_search import web_search_tool
from harness.sandbox import Sandbox
from harness.sandbox.command_env import ENV_NAME
from harness.sandbox.python_env import PythonEnv
from harness.spec.loop_spec import LoopSpec
from harness.spec.sections import GateConfig
from harness.tools import Tool, default_tools
from harness.tools.mcp import McpServer
from harness.verify.gate_config import (
    CommandGateConfig,
    HeldOutConfig,
    HumanGateConfig,
    PytestGateConfig,
    ScriptGateConfig,
)
from harness.verify.gates import CommandGate, Gate, PredicateGate
from harness.verify.held_out import HeldOutGate
from harness.verify.human import HumanGate
from harness.verify.pytest_gate import PytestGate
from harness.verify.reproduction import ReproductionGate
from harness.workspace.git_cmd import tracked_files


def build_sandbox(
    config: LoopSpec, *, hooks: bool = False, python_env: PythonEnv | None = None
) -> Sandbox:
    """The ``[sandbox]`` of ``config``; the loop's progress file and run folders stay read-only,
    and so do the workspace's paths its ``[permissions]`` keep the file tools from writing.

    ``readonly`` paths are relative to the spec's root unless absolute or under ``~``. ``hooks``:
    the sandbox of the command hooks, with ``[hooks]``'s variables and network. ``python_env``:
    the project's environment (see :func:`~harness.assemble.env_setup.project_env`).
    """
    settings, root = config.sandbox, config.root
    progress = config.progress_path()
    hidden = [
        root / g.held_out for g in config.gates if isinstance(g, HeldOutConfig) and g.held_out
    ]
    state = [progress, progress.with_name(progress.name + ".lock"), root / RUNS_DIR]
    state += _state_folder(progress, root / config.workspace)
    shown = [root / Path(path).expanduser() for path in settings.readonly]
    env, network = settings.env, settings.network
    if hooks:
        env = [*env, *config.hooks.env]
        network = network if config.hooks.network is None else config.hooks.network
    try:
        return Sandbox(
            settings.backend, network=network, env=env, limits=settings.limits,
            readonly=state + shown, image=settings.image, hidden=hidden, python_env=python_env,
            workdir=settings.workdir, keep=settings.keep, image_python=settings.image_python,
            guarded=config.permissions.guarded(),
        )  # fmt: skip
    except ConfigError as exc:  # "backend: x" -> "<folder>/loop.toml: field 'sandbox.backend': x"
        field, _, problem = str(exc).partition(": ")
        if field.partition(".")[0] not in type(settings).model_fields:
            raise  # not a field's (a bad HARNESS_SANDBOX_ENV): said as it is
        raise ConfigError(f"{config.source}: field 'sandbox.{field}': {problem}") from None


def _hooks_sandbox(config: LoopSpec, python_env: PythonEnv | None) -> Sandbox | None:
    """The command hooks' sandbox when ``[hooks]`` sets theirs apart; None: the agent's."""
    hooks = config.hooks
    if not hooks.env and hooks.network in (None, config.sandbox.network):
        return None
    return build_sandbox(config, hooks=True, python_env=python_env)


def _state_folder(progress: Path, workspace: Path) -> list[Path]:
    """The progress file's folder, when it is one of its own inside the workspace: read-only to
    commands, so none can queue a note or an answer beside progress.md as if from a person (a
    file that does not exist yet cannot be mounted read-only on its own)."""
    folder, space = progress.parent.resolve(), workspace.resolve()
    return [folder] if space in folder.parents else []


def build_gate(
    config: GateConfig,
    root: Path,
    sandbox: Sandbox | None = None,
    run: Path | None = None,
    archive: SourceArchive | None = None,
) -> Gate | HumanGate:
    """The gate ``config`` describes; ``run`` is the run's folder (its claim ledger) and
    ``archive`` the sources its tools fetched."""
    if isinstance(config, CitationsGateConfig | ConvergenceGateConfig):
        return research_gate(config, run, archive)
    if isinstance(config, HumanGateConfig):
        return HumanGate(timeout=config.timeout, interactive=config.interactive)
    if config.type == "reproduction":
        return ReproductionGate(**config.model_dump(exclude={"type"}), sandbox=sandbox)
    gate: Gate
    if isinstance(config, PytestGateConfig):
        gate = PytestGate(config.args, timeout=config.timeout, sandbox=sandbox)
    elif isinstance(config, CommandGateConfig):
        gate = CommandGate(config.cmd, name=config.name, timeout=config.timeout, sandbox=sandbox)
    else:
        return _predicate_gate(config, root)
    if config.held_out is None:
        return gate
    return HeldOutGate(gate, root / config.held_out, feedback=config.feedback)


def research_gate(
    config: CitationsGateConfig | ConvergenceGateConfig,
    run: Path | None,
    archive: SourceArchive | None,
) -> Gate:
    """A citations or convergence gate reading ``archive`` (the ledger in the folder ``run``);
    a :class:`ConfigError` when there is no run to read (``fleet.evaluate``)."""
    if run is None or archive is None:
        raise ConfigError(f"gates: a {config.type} gate checks a run's sources; use it in gates")
    if isinstance(config, CitationsGateConfig):
        return citations_gate(
            config.file, archive=archive, sources=config.sources, min_sources=config.min_sources,
            require_contradictions=config.require_contradictions, name=config.name,
        )  # fmt: skip
    return convergence_gate(
        config.file, archive=archive, ledger=run / LEDGER_FILE, sources=config.sources,
        stable_rounds=config.stable_rounds, min_sources=config.min_sources, name=config.name,
        redact=archive.redact or str,
    )  # fmt: skip


def run_folder(root: Path, run_id: str) -> Path:
    """Where a run keeps its events, its archive of sources and its claim ledger."""
    return root / RUNS_DIR / run_id


def _check_held_out(config: LoopSpec) -> None:
    """Each held-out folder exists, and lies outside the workspace (the agent never sees it)."""
    workspace = (config.root / config.workspace).resolve()
    for index, gate in enumerate(config.gates):
        if not isinstance(gate, HeldOutConfig) or gate.held_out is None:
            continue
        folder = (config.root / gate.held_out).resolve()
        where = f"{config.source}: field 'gates[{index}].held_out'"
        if not folder.is_dir():
            raise ConfigError(f"{where}: {folder} is not a folder")
        if folder == workspace or workspace in folder.parents or folder in workspace.parents:
            raise ConfigError(
                f"{where}: {folder} must lie outside the workspace ({workspace}), where the "
                "agent cannot read it"
            )
        tracked = tracked_files(workspace, folder)
        if tracked:
            raise ConfigError(
                f"{where}: {folder} is committed to the repository the agent works in "
                f"({tracked[0]} and {len(tracked) - 1} more): every run's worktree holds a copy "
                "and git shows it to the agent (`git show HEAD:...`); keep it outside the "
                "repository, or untracked (in .gitignore)"
            )


def _predicate_gate(config: ScriptGateConfig, root: Path) -> Gate:
    module_name, _, function_name = config.target.partition(":")
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        function = getattr(importlib.import_module(module_name), function_name)
    except (ImportError, AttributeError) as exc:
        problem = f"gates: python gate target {config.target!r} cannot be loaded: {exc}"
        raise ConfigError(problem) from exc
    return PredicateGate(function, name=config.name or function_name)


def build_loop(
    config: LoopSpec,
    *,
    overrides: Overrides = Overrides(),
    events: EventSink,
    run_id: str | None = None,
    redact: Callable[[str], str] | None = None,
    tools: Sequence[Tool] = (),
    mcp: Sequence[McpServer] = (),
    model: Model | None = None,
    wrap: Callable[[Model], Model] | None = None,
) -> OuterLoop:
    """The outer loop ``config`` describes; relative paths start at its root.

    ``tools`` are given to the agent beside the built-ins (MCP servers' tools started by the
    caller); ``mcp`` are servers the loop starts and stops itself (see :func:`mcp_servers`).
    ``model`` answers for the author, the subagents and the critic, whatever the spec names (a
    replay's); ``wrap`` turns each model the spec names into the one the loop calls (a live
    replay's, which asks the recording first); the preflight checks it as named.
    """
    root = config.root
    run_id = run_id or new_run_id()
    run = run_folder(root, run_id)
    redact = redact or config.redactor().redact_text  # every text the run writes or sends
    archive = SourceArchive(run / ARCHIVE_DIR, own_only=True, redact=redact)  # tools' and gates'

    _check_held_out(config)
    if overrides.earlier != "restart":
        check_unchanged(config)  # before anything in those files is used
    check_gate_modules(config)
    pins = pins_of(config)  # what this run takes them to be, recorded when it begins
    given = model
    model_name = given.name if given else author_name(config, overrides)
    model_source = override_source(overrides.model, "--model", MODEL_ENV)
    model = given or overridable(lambda: spec_model(model_name, config.model_options), model_source)
    skill = config.load_skill()
    python_env = project_env(config)  # a set-up command runs here, once per commit
    sandbox = build_sandbox(config, python_env=python_env)
    author = model if wrap is None else wrap(model)
    agent: Session = (
        external_runner(config, author, sandbox)
        if config.agent.runner != "harness"
        else Agent.from_config(
            author,
            [*default_tools(), *_web_tools(config, archive, redact), *tools],
            config.agent,
            sandbox=sandbox,
            permissions=session.permissions(config),
            hooks=session.action_hooks(config),
            subagents=session.subagents(
                config, lambda name: profile_model(name, config, given, wrap)
            ),
        )
    )
    critic, checks = unchecked_critic(
        config, overrides, skill, model_name, model, replay=given, wrap=wrap
    )
    cascade, named = cascade_of(config, overrides, model, author, given=given, wrap=wrap)
    for made, source in [*(named or [(model, model_source or "model")]), *checks]:
        preflighted(made, source)
    on_finish, ci = build_connectors(config, events=events, redact=redact, issue=overrides.issue)
    return OuterLoop(
        config.goal,
        agent,
        gates=[build_gate(g, root, sandbox, run, archive) for g in config.gates],
        critic=critic,
        skill=skill,
        progress=config.progress_path(),
        max_iterations=overrides.max_iterations or config.max_iterations,  # flag is 1-100
        workspace=root / config.workspace,
        **config.model_dump(include=SPEC_SETTINGS),
        critic_artifact=_artifact(config),
        earlier=overrides.earlier,
        run_id=run_id,
        start=overrides.start,
        events=events,
        loop_file=str(config.source.resolve()) if isinstance(config.source, Path) else None,
        redact=redact,
        mcp=tuple(mcp),
        hook_sandbox=_hooks_sandbox(config, python_env),
        pins=pins,
        ci=ci,
        on_finish=on_finish,
        on_resume=_on_resume(config, run, archive),
        cascade=cascade,
    )


SPEC_SETTINGS = {*LoopRules.model_fields, "on_escalate", "on_round"} - {"max_iterations"}
"""What loop.toml gives the loop as it is: its rules (but the round cap, which a flag may set)
and its hook commands."""


def _on_resume(config: LoopSpec, run: Path, archive: SourceArchive) -> ResumeHook | None:
    """What a resumed run of a research loop (``[web]`` or a research gate) carries from the
    run it resumes: its archive and claim ledger (a run that starts afresh resumes none)."""
    research = config.web is not None or any(
        isinstance(g, CitationsGateConfig | ConvergenceGateConfig) for g in config.gates
    )
    if not research:
        return None
    return carry_on_resume(
        config.root, run, archive, loop_name=config.name, workspace=config.root / config.workspace
    )


def _web_tools(
    config: LoopSpec, archive: SourceArchive, redact: Callable[[str], str]
) -> list[Tool]:
    """``fetch_url``, ``web_search`` and ``read_source`` as ``[web]`` asks, keeping what they
    read in ``archive``; what they send passes ``redact``."""
    web = config.web
    if web is None:
        return []
    tools = [read_source_tool(archive)]
    try:
        if web.allow_domains is not None:
            check_domains(web.allow_domains)  # before the archive: the first field is named first
            replay = None
            if web.replay is not None:
                folder = config.root / web.replay
                if not (folder / INDEX_FILE).is_file():
                    raise ConfigError(f"replay: {folder} is not an archive (no {INDEX_FILE})")
                replay = SourceArchive(folder)
            tools.append(fetch_url_tool(web, archive, replay=replay, redact=redact))
    except MissingExtra:
        raise  # it names its extra, not a field of [web]
    except ConfigError as exc:
        raise ConfigError(f"web.{exc}") from exc
    try:
        if web.search is not None:
            tools.append(web_search_tool(web.search, archive=archive, redact=redact))
    except MissingExtra:
        raise
    except ConfigError as exc:
        raise ConfigError(f"web.search.{exc}") from exc
    return tools


_ENV_REFERENCE = re.compile(rf"\$\{{({ENV_NAME})\}}")


def mcp_servers(config: LoopSpec) -> list[McpServer]:
    """loop.toml's ``[[mcp]]`` entries; ``${NAME}`` in an env value is taken from the environment.
    Their calls' arguments pass the loop's redactor."""
    redact = config.redactor().redact_text if config.mcp else None
    servers = []
    for index, entry in enumerate(config.mcp):
        env = {}
        for key, value in entry.env.items():
            missing = [n for n in _ENV_REFERENCE.findall(value) if n not in os.environ]
            if missing:
                raise ConfigError(
                    f"mcp[{index}].env.{key}: the environment variable {missing[0]} is not set"
                )
            env[key] = _ENV_REFERENCE.sub(lambda m: os.environ[m.group(1)], value)
        servers.append(
            McpServer(
                **entry.model_dump(exclude={"command", "env", "cwd"}),
                command=tuple(entry.command or ()),
                env=env,
                cwd=config.root / entry.cwd if entry.cwd else config.root,
                redact=redact,
            )
        )
    return servers


def _artifact(config: LoopSpec) -> CriticArtifact:
    if config.critic.artifact != "file":
        return config.critic.artifact
    assert config.critic.file, "LoopSpec checks critic.file"
    return ArtifactFile(config.critic.file)
