"""The inner loop: a tool-calling agent that observes, reasons and acts until it answers."""

from __future__ import annotations

import copy
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, StrictInt

from harness.agent.actions import ActionGuard, ActionHook, Asker, check_hooks
from harness.agent.compaction import Compaction, ContextOverflow, compaction_of, make_compaction
from harness.agent.config import AGENT_DEFAULTS, AGENT_KEYWORDS, DEFAULT_SYSTEM_PROMPT, AgentConfig
from harness.agent.ledger import Ledger
from harness.agent.stuck import StuckWatch
from harness.agent.subagent import SUBAGENT_TOOL, Profile, Subagents, subagent_tool
from harness.core.errors import ConfigError, Stopped, ToolError
from harness.core.event_schema import (
    SessionEnd,
    SessionStart,
    SubagentEvent,
    ToolCallEvent,
    ToolStart,
)
from harness.core.section import check_field, check_value
from harness.core.sink import NULL_SINK, EventSink
from harness.core.usage import Usage
from harness.models.base import Message, Model, Reply, ToolCall, token_ceiling
from harness.models.budget import metered
from harness.sandbox import Sandbox
from harness.tools import Tool, Toolbox, ToolContext, ToolResult, default_tools
from harness.tools.permissions import Permissions

Limit = Annotated[StrictInt, Field(gt=0)]  # max_malformed, max_repeats, max_errors
CUT_SHORT = "[harness] Your reply was cut off at its token limit. Go on from where it stopped."


class AgentStop(StrEnum):
    """Why an inner session ended."""

    ANSWERED = "answered"  # the model replied without a tool call
    SUBMITTED = "submitted"  # the model called submit
    MAX_STEPS = "max_steps"
    MALFORMED = "malformed"  # too many consecutive replies with only malformed tool calls
    CONTEXT_FULL = "context_full"  # compaction could not bring the context under the window
    STUCK = "stuck"  # the same call with the same result, or failed calls, past their limit
    INTERRUPTED = "interrupted"  # a run-wide bound (budget, time) stopped it; see .interruption
    EXITED = "exited"  # an external agent's process ended with a non-zero exit code
    TIMED_OUT = "timed_out"  # an external agent's session ran past its time limit


@dataclass
class AgentRun:
    """The outcome of one inner session."""

    final: str | None
    messages: list[Message]
    steps: int
    usage: Usage
    stop_reason: AgentStop
    stop_message: str = ""
    interruption: Stopped | None = None
    files_touched: set[str] = field(default_factory=set)
    commands_run: list[str] = field(default_factory=list)
    files_written: set[str] = field(default_factory=set)
    subagents: list[AgentRun] = field(default_factory=list)  # the child sessions it started


class Agent:
    """A tool-calling agent. ``run(task)`` loops ``step()`` until an answer, ``submit`` or a cap.

    ``max_steps`` bounds model replies in one session (each reply may carry several tool calls,
    all executed in order). A malformed call (bad JSON, unknown tool, wrong arguments) is answered
    with an error observation the model can correct; ``max_malformed`` consecutive replies made
    only of such calls end the session with ``AgentStop.MALFORMED``.

    A session going round in circles is ended with ``AgentStop.STUCK``: after a cycle of calls
    (the same call, or up to 4 calls in turn, A B A B ...) went round ``max_repeats`` times with
    identical results, or ``max_errors`` failed calls in a row, the observation carries a note
    saying so; one more call that keeps it going ends the session.

    ``compaction`` keeps the session inside the model's window: ``"mask_observations"`` (the
    default), ``"summarize"``, ``"none"``/``None``, or any object with ``maybe_compact``.

    ``permissions`` judge every call before it runs, ``asker`` asks a person when they say
    ``ask`` (none: the run is unattended), and ``hooks`` run before and after calls
    (:mod:`harness.agent.actions`). ``subagents`` gives the agent the ``subagent`` tool
    (:mod:`harness.agent.subagent`).
    """

    def __init__(
        self,
        model: Model,
        tools: list[Tool] | None = None,
        *,
        system_prompt: str | None = AGENT_DEFAULTS.system_prompt,
        max_steps: int = AGENT_DEFAULTS.max_steps,
        compaction: str | Compaction | None = AGENT_DEFAULTS.compaction,
        max_malformed: int = 5,
        max_repeats: int = 3,
        max_errors: int = 5,
        max_tokens: int | None = AGENT_DEFAULTS.max_tokens,
        shell_timeout: float = AGENT_DEFAULTS.shell_timeout,
        max_output_chars: int = 20_000,
        sandbox: Sandbox | None = None,
        permissions: Permissions | None = None,
        asker: Asker | None = None,
        hooks: Iterable[ActionHook] = (),
        subagents: Subagents | None = None,
    ) -> None:
        self.max_malformed: int = check_value(Limit, max_malformed, "max_malformed")
        self.max_repeats: int = check_value(Limit, max_repeats, "max_repeats")
        self.max_errors: int = check_value(Limit, max_errors, "max_errors")
        self.model = model
        self.toolbox = Toolbox(default_tools() if tools is None else tools)
        self.system_prompt = system_prompt or DEFAULT_SYSTEM_PROMPT
        self.max_steps: int = check_field(AgentConfig, "max_steps", max_steps)
        self.compaction: Compaction = make_compaction(compaction)
        self.max_tokens: int | None = check_field(AgentConfig, "max_tokens", max_tokens)
        self.shell_timeout: float = check_field(AgentConfig, "shell_timeout", shell_timeout)
        self.max_output_chars = max_output_chars
        self.sandbox = sandbox  # where run_shell runs; None: Sandbox("auto")
        self.permissions = permissions
        self.asker = asker
        self.hooks = check_hooks(hooks)
        self.subagents = subagents
        self.depth = 0  # how deep a child session this agent runs (0: not a child)

    @classmethod
    def from_config(
        cls, model: Model, tools: list[Tool], config: AgentConfig, **runtime: Any
    ) -> Agent:
        """The agent ``[agent]`` describes (its keywords' defaults and checks are that section's,
        :class:`AgentConfig`); ``runtime``: its sandbox, permissions, hooks, subagents."""
        given = config.model_dump(include=AGENT_KEYWORDS)
        return cls(model, tools, compaction=compaction_of(config), **given, **runtime)

    def with_tools(self, tools: Iterable[Tool]) -> Agent:
        """A copy of this agent that also has ``tools`` (an MCP server's, for one run)."""
        twin = copy.copy(self)
        twin.toolbox = Toolbox([*self.toolbox, *tools])
        return twin

    def with_model(self, model: Model) -> Agent:
        """A copy of this agent that talks to ``model`` (the run's metered one)."""
        twin = copy.copy(self)
        twin.model = model
        return twin

    def with_asker(self, asker: Asker | None) -> Agent:
        """A copy of this agent whose permission asks go to ``asker`` (a round's approval inbox)."""
        twin = copy.copy(self)
        twin.asker = asker
        return twin

    def child(self, model: Model, tools: list[Tool], profile: Profile, *, nested: bool) -> Agent:
        """The agent of a child session: one level deeper, with ``profile``'s prompt and step
        cap, ``tools`` and ``model``; it may start children of its own only when ``nested``."""
        twin = copy.copy(self)
        twin.model, twin.toolbox, twin.max_steps = model, Toolbox(tools), profile.max_steps
        twin.system_prompt = profile.system_prompt or DEFAULT_SYSTEM_PROMPT
        twin.depth = self.depth + 1
        twin.subagents = self.subagents if nested else None
        return twin

    def check_fits(self, task: str) -> None:
        """Raise :class:`ConfigError` when the first request of a session on ``task`` (system
        prompt, tool schemas and task) cannot fit the model's context window; counted only
        when its UTF-8 size (a ceiling of its tokens) could pass the window."""
        first: list[Message] = [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": task},
        ]
        schemas, window = self.toolbox.schemas(), self.model.context_window
        if token_ceiling(self.model, first, schemas) <= window:
            return  # its bytes cannot reach the window: no tokenizer needed
        needed = self.model.count_tokens(first, schemas)
        if needed > window:
            raise ConfigError(
                f"goal: the task needs {needed:,} tokens with the system prompt and tool schemas, "
                f"but {self.model.name} reads at most {window:,}; shorten the goal or SKILL.md, "
                "or use a model with a larger context window"
            )

    def run(
        self,
        task: str,
        workspace: str | Path = ".",
        *,
        ledger: Ledger | None = None,
        protect: tuple[str, ...] = (),
        events: EventSink = NULL_SINK,
        env: dict[str, str] | None = None,
    ) -> AgentRun:
        """Work on ``task`` inside ``workspace`` until an answer, ``submit`` or a cap."""
        session = _Session(self, task, Path(workspace).resolve(), ledger, protect, events, env)
        return session.run()


class _Session:
    """The state of one ``Agent.run``; the loop itself reads in :meth:`run`."""

    def __init__(
        self,
        agent: Agent,
        task: str,
        workspace: Path,
        ledger: Ledger | None,
        protect: tuple[str, ...],
        events: EventSink,
        env: dict[str, str] | None,
    ) -> None:
        if not workspace.is_dir():
            raise ConfigError(f"workspace: {workspace} is not a folder")
        self.agent = agent
        self.events = events
        self.model = metered(agent.model, events=events)
        self.summariser = self.model.for_role("summariser")
        self.usage_before = self.model.meter.usage
        self.ledger = ledger or Ledger(goal=task)
        self.ctx = ToolContext(
            workspace=workspace,
            protect=protect,
            shell_timeout=agent.shell_timeout,
            max_output_chars=agent.max_output_chars,
            env=env,
            sandbox=agent.sandbox,
            time_left=self.model.meter.remaining_seconds,
        )
        self.toolbox = agent.toolbox
        if agent.subagents is not None:
            delegate = subagent_tool(self.delegate, agent.subagents.profiles)
            self.toolbox = Toolbox([*agent.toolbox, delegate])
        self.schemas = self.toolbox.schemas()  # one list a session: the trajectory keeps it once
        self.children: list[AgentRun] = []
        self.guard = ActionGuard(
            self.ctx, events, agent.permissions, agent.hooks, agent.asker, lambda: self.steps
        )
        self.messages: list[Message] = [
            {"role": "system", "content": agent.system_prompt},
            {"role": "user", "content": task},
        ]
        self.steps = 0
        self.malformed_streak = 0
        self.stuck = StuckWatch(agent.max_repeats, agent.max_errors)

    def run(self) -> AgentRun:
        self.events.emit(SessionStart(role="author", model=self.model.name))
        try:
            while self.steps < self.agent.max_steps:
                outcome = self.step()
                if outcome is not None:
                    return self.finish(*outcome)
            return self.finish(
                AgentStop.MAX_STEPS, None, f"step cap of {self.agent.max_steps} reached"
            )
        except ContextOverflow as exc:
            return self.finish(AgentStop.CONTEXT_FULL, None, str(exc))
        except Stopped as stop:
            run = self.finish(AgentStop.INTERRUPTED, None, stop.message)
            run.interruption = stop
            return run
        finally:
            self.events.emit(SessionEnd())  # a parent's later steps are its own again

    def step(self) -> tuple[AgentStop, str | None, str] | None:
        """One model reply and its tool calls; a stop triple when the session is over."""
        self.messages = self.agent.compaction.maybe_compact(
            self.messages,
            model=self.summariser,
            ledger=self.ledger,
            events=self.events,
        )
        reply = self.model.complete(self.messages, self.schemas, max_tokens=self.agent.max_tokens)
        self.steps += 1
        self.messages.append(reply.to_message())
        if reply.tool_calls:
            return self.execute_all(reply)
        if not reply.truncated:
            return AgentStop.ANSWERED, reply.content, "the model answered without a tool call"
        self.messages.append({"role": "user", "content": CUT_SHORT})  # not an answer yet
        return None

    def execute_all(self, reply: Reply) -> tuple[AgentStop, str | None, str] | None:
        submitted: str | None = None
        malformed = 0
        for call in reply.tool_calls:
            started = time.monotonic()
            result, was_malformed = self.execute(call)
            malformed += was_malformed
            note = None  # malformed calls have their own limit, max_malformed
            if not was_malformed:
                note = self.stuck.observe(
                    call.name, call.arguments_json, result.output, failed=result.is_error
                )
            content = result.output + (f"\n\n{note}" if note else "")
            self.events.emit(
                ToolCallEvent(
                    name=call.name,
                    arguments_preview=call.arguments_json,  # the log cuts it after redacting
                    exit_code=result.exit_code,
                    is_error=result.is_error,
                    duration=time.monotonic() - started,
                    output_chars=len(result.output),
                    step=self.steps,
                    call_id=call.id,
                    observation=content,  # what the model is sent back, for the trajectory
                )
            )
            self.messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
            if result.final and submitted is None:
                submitted = result.output
        if submitted is not None:
            return AgentStop.SUBMITTED, submitted, "the model called submit"
        stuck = self.stuck.verdict()
        if stuck is not None:
            return AgentStop.STUCK, None, f"stuck: {stuck}"
        self.malformed_streak = (
            self.malformed_streak + 1 if malformed == len(reply.tool_calls) else 0
        )
        if self.malformed_streak >= self.agent.max_malformed:
            message = f"{self.malformed_streak} consecutive replies held only malformed tool calls"
            return AgentStop.MALFORMED, None, message
        return None

    def execute(self, call: ToolCall) -> tuple[ToolResult, bool]:
        """Run one call; the flag says whether the call itself was malformed."""
        self.events.emit(
            ToolStart(name=call.name, arguments_preview=call.arguments_json, step=self.steps)
        )
        refusal = self.guard.before(call)
        result = refusal if refusal is not None else self.toolbox.execute(call, self.ctx)
        if refusal is None and not result.malformed:
            result = self.guard.after(call, result)
        if result.arguments is not None and not result.is_error:
            self.ledger.note_tool_call(call.name, result.arguments)
        return result, result.malformed

    def finish(self, reason: AgentStop, final: str | None, message: str) -> AgentRun:
        return AgentRun(
            final=final,
            messages=self.messages,
            steps=self.steps,
            usage=self.model.meter.usage - self.usage_before,
            stop_reason=reason,
            stop_message=message,
            files_touched=set(self.ctx.files_touched),
            commands_run=list(self.ctx.commands_run),
            files_written=set(self.ctx.files_written),
            subagents=self.children,
        )

    def delegate(self, task: str, name: str | None, tools: list[str] | None) -> AgentRun:
        """Run a child session on ``task`` (the ``subagent`` tool); refused past the depth cap."""
        config = self.agent.subagents
        assert config is not None
        if self.agent.depth >= config.max_depth:
            raise ToolError(
                f"refused: subagents nest at most {config.max_depth} deep, "
                f"and this session is at depth {self.agent.depth}"
            )
        profile = config.profile(name)
        mine = [tool.name for tool in self.toolbox]
        offered = list(profile.tools) if profile.tools is not None else mine
        chosen = offered if tools is None else tools
        unknown = [tool for tool in chosen if tool not in offered or tool not in mine]
        if unknown:
            raise ToolError(f"tools not available to the subagent: {', '.join(unknown)}; "
                            f"it may use: {', '.join(t for t in offered if t in mine)}")  # fmt: skip
        model = self.model.for_role("author", profile.model) if profile.model else self.model
        tool_list = [tool for tool in self.agent.toolbox if tool.name in chosen]
        nested = SUBAGENT_TOOL in chosen
        child = self.agent.child(model, tool_list, profile, nested=nested)
        run = child.run(
            task, self.ctx.workspace, protect=self.ctx.protect, events=self.events, env=self.ctx.env
        )
        self.children.append(run)
        self.ctx.files_touched |= run.files_touched
        self.ctx.files_written |= run.files_written
        self.ctx.commands_run.extend(run.commands_run)
        self.events.emit(
            SubagentEvent(
                profile=name,
                depth=child.depth,
                model=model.name,
                stop_reason=str(run.stop_reason),
                steps=run.steps,
                tokens=run.usage.total_tokens,
                cost_usd=run.usage.cost_usd,
                files=sorted(run.files_written),
            )
        )
        return run
