"""What stands around each tool call: permission rules (asking a person when they say so) and
action hooks run before and after it.

* **Permissions** (:class:`~harness.tools.permissions.Permissions`): a denied call is not run;
  the model reads why. ``ask`` asks a person through ``asker`` (the loop's approval inbox, which
  ``harness approve`` answers) and waits up to ``ask_timeout``; no answer in time is a denial.
  With no ``asker`` the run is unattended and ``unattended`` answers (deny, unless set to allow).
* **Action hooks** (:class:`ActionHook`): a command or a Python callable run before or after the
  calls of the tools it names. Before a call it may block it with a reason the model reads;
  after it, what it says is added to the observation (a linter's complaint after ``write_file``).
  A hook that makes tool calls of its own (a review loop, a nested session) does not fire again
  inside itself: a hook already running, or hooks nested :data:`MAX_HOOK_DEPTH` deep, are
  skipped with a ``guarded`` event. A loop a hook starts is bounded like any loop (the engine's
  nesting limit and watchdog).

Every decision and every hook's outcome is an event.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from harness.core.errors import ConfigError, Stopped
from harness.core.event_schema import ActionHookEvent, PermissionEvent
from harness.core.section import Section, check_field
from harness.core.sink import EventSink
from harness.core.text import truncate
from harness.models.base import ToolCall
from harness.sandbox import default_sandbox
from harness.tools import ToolContext, ToolResult
from harness.tools.permissions import Decision, Permissions

Answer = Literal["approved", "rejected", "timed_out"]
Asker = Callable[[str, float], Answer]
"""Asks a person to allow an action (its description, seconds to wait) and returns the answer."""

When = Literal["before", "after"]
MAX_HOOK_DEPTH = 3
"""Hooks running inside hooks at most this deep; deeper ones are skipped as ``guarded``."""
HOOK_OUTPUT_CHARS = 4_000
PAYLOAD_CHARS = 100_000
"""The most of ``HARNESS_ACTION``: Linux refuses one environment string over 128 KiB."""
_RUNNING: ContextVar[tuple[str, ...]] = ContextVar("harness_action_hooks", default=())


@dataclass(frozen=True)
class ActionCall:
    """A tool call as a hook sees it; ``result`` is set after the call."""

    tool: str
    arguments: Mapping[str, Any]
    workspace: Path
    result: ToolResult | None = None


@dataclass(frozen=True)
class Block:
    """A before hook's answer that keeps the call from running; the model reads ``reason``."""

    reason: str


HookFunction = Callable[[ActionCall], "str | Block | None"]


HOOK_SECONDS = 120.0
"""How long an action hook's command may run, seconds, unless its ``timeout`` says otherwise."""


class ActionHookConfig(Section):
    """One ``[[action_hooks]]``: a command run before or after the agent's calls of ``tools``
    (see :class:`ActionHook`): before, a non-zero exit blocks the call; after, its output is
    added to the observation when it fails (or always, with ``observe = "always"``)."""

    name: str = Field(pattern=r"^[\w.-]{1,64}$")
    when: When
    command: str = Field(min_length=1)
    tools: list[Annotated[str, Field(min_length=1)]] = ["*"]  # tool names or globs
    timeout: float = Field(HOOK_SECONDS, gt=0, le=3600)
    observe: Literal["failure", "always"] = "failure"


@dataclass(frozen=True)
class ActionHook:
    """Run ``run`` before or after each call of the tools named by ``tools`` (globs).

    ``run`` is a shell command, run in the sandbox in the workspace with the environment
    ``run_shell`` gets and the call as JSON in ``HARNESS_ACTION`` (a before hook that exits non-zero blocks the call, its output the
    reason; an after hook's output is added when it exits non-zero, or always with
    ``observe="always"``), or a callable given an :class:`ActionCall` that returns a
    :class:`Block` (before only), text to add to the observation, or None. A callable that
    raises blocks the call (before) or has its error added to the observation (after).
    """

    name: str
    when: When
    run: str | HookFunction
    tools: tuple[str, ...] = ("*",)
    timeout: float = HOOK_SECONDS
    observe: Literal["failure", "always"] = "failure"

    def __post_init__(self) -> None:
        if self.when not in ("before", "after"):
            raise ConfigError(f"hook {self.name!r}: when must be 'before' or 'after'")
        if not (callable(self.run) or (isinstance(self.run, str) and self.run.strip())):
            raise ConfigError(f"hook {self.name!r}: run must be a command or a callable")
        check_field(ActionHookConfig, "timeout", self.timeout, name=f"hook {self.name!r}: timeout")

    def applies_to(self, tool: str) -> bool:
        return any(fnmatchcase(tool, pattern) for pattern in self.tools)


@dataclass
class ActionGuard:
    """The permission rules and hooks of one session, applied call by call."""

    ctx: ToolContext
    events: EventSink
    permissions: Permissions | None = None
    hooks: tuple[ActionHook, ...] = ()
    asker: Asker | None = None
    step: Callable[[], int] = field(default=lambda: 0)

    def __post_init__(self) -> None:
        # split once: a session with no rules and no hooks pays nothing per call
        self._before = tuple(hook for hook in self.hooks if hook.when == "before")
        self._after = tuple(hook for hook in self.hooks if hook.when == "after")

    def before(self, call: ToolCall) -> ToolResult | None:
        """None to run ``call``; else the refusal the model reads in its place."""
        hooks = _applying(self._before, call.name)
        if self.permissions is None and not hooks:
            return None
        arguments = _arguments(call)
        if self.permissions is not None:
            refusal = self._permit(call.name, arguments)
            if refusal is not None:
                return refusal
        action = ActionCall(call.name, arguments, self.ctx.workspace)
        for hook, said in self._run_hooks(hooks, action):
            if isinstance(said, Block):
                return ToolResult(f"error: blocked by hook {hook.name}: {said.reason}", True)
        return None

    def after(self, call: ToolCall, result: ToolResult) -> ToolResult:
        """``result`` with what the after hooks said added to its observation."""
        hooks = _applying(self._after, call.name)
        if not hooks:
            return result
        action = ActionCall(call.name, _arguments(call), self.ctx.workspace, result)
        notes = [
            f"[hook {hook.name}]\n{said}"
            for hook, said in self._run_hooks(hooks, action)
            if isinstance(said, str) and said.strip()
        ]
        if not notes:
            return result
        return replace(result, output="\n\n".join([result.output, *notes]))

    def _permit(self, tool: str, arguments: Mapping[str, Any]) -> ToolResult | None:
        assert self.permissions is not None
        decision = self.permissions.decide(tool, arguments, workspace=self.ctx.workspace)
        answer: Literal["approved", "rejected", "timed_out", "unattended"] | None = None
        allowed = decision.verdict == "allow"
        if decision.verdict == "ask":
            if self.asker is None or not self.permissions.attended:
                answer, allowed = "unattended", self.permissions.unattended == "allow"
            else:
                rule = f" (rule {decision.rule})" if decision.rule else ""
                question = f"The agent asks to run {tool}: {decision.subject}{rule}"
                answer = self.asker(question, self.permissions.ask_timeout)
                allowed = answer == "approved"
        self.events.emit(
            PermissionEvent(
                tool=tool,
                subject=decision.subject[:2000],
                verdict=decision.verdict,
                decision="allowed" if allowed else "denied",
                rule=decision.rule,
                source=decision.source,
                answer=answer,
                reason=decision.reason,
                step=self.step(),
            )
        )
        if allowed:
            return None
        return ToolResult(f"error: {_refusal(decision, answer)}", is_error=True)

    def _run_hooks(
        self, hooks: tuple[ActionHook, ...], action: ActionCall
    ) -> Iterator[tuple[ActionHook, object]]:
        for hook in hooks:
            running = _RUNNING.get()
            if hook.name in running or len(running) >= MAX_HOOK_DEPTH:
                inside = " > ".join(running)
                self._hook_event(hook, action, "guarded", f"not run inside hooks {inside}")
                continue
            with _inside(hook.name):
                said, outcome, detail = self._call(hook, action)
            self._hook_event(hook, action, outcome, detail)
            yield hook, said

    def _call(self, hook: ActionHook, action: ActionCall) -> tuple[object, str, str]:
        """What the hook said, and the outcome and detail its event records."""
        if not isinstance(hook.run, str):
            try:
                said = hook.run(action)
            except Stopped:
                raise  # a run-wide bound reached inside the hook stops the session too
            except Exception as exc:  # recorded, and the call is judged as the hook's failure
                failure = f"{type(exc).__name__}: {exc}"
                said = Block(f"the hook failed: {failure}") if hook.when == "before" else failure
                return said, "blocked" if hook.when == "before" else "failed", failure[:1000]
            if isinstance(said, Block):
                if hook.when == "after":
                    raise ConfigError(f"hook {hook.name!r}: an after hook cannot block")
                return said, "blocked", said.reason[:1000]
            return said, "observed" if said else "passed", ""
        sandbox = self.ctx.sandbox or default_sandbox()
        result = sandbox.run(
            hook.run,
            cwd=self.ctx.workspace,
            timeout=hook.timeout,
            env={**self.ctx.command_env(), "HARNESS_ACTION": _payload(action)},
            max_output=HOOK_OUTPUT_CHARS,
        )
        output = truncate(result.output.strip(), HOOK_OUTPUT_CHARS)
        failed = result.exit_code != 0 or result.timed_out
        detail = f"[{result.status}] {output}"[:1000]
        if hook.when == "before":
            return (
                (Block(output or result.status), "blocked", detail)
                if failed
                else (None, "passed", "")
            )
        if failed or (hook.observe == "always" and output):
            return f"[{result.status}]\n{output}", "failed" if failed else "observed", detail
        return None, "passed", ""

    def _hook_event(self, hook: ActionHook, action: ActionCall, outcome: str, detail: str) -> None:
        self.events.emit(
            ActionHookEvent(
                hook=hook.name,
                when=hook.when,
                tool=action.tool,
                outcome=outcome,  # type: ignore[arg-type]
                detail=detail,
                step=self.step(),
            )
        )


def check_hooks(hooks: Iterable[ActionHook]) -> tuple[ActionHook, ...]:
    """``hooks`` as a tuple; two hooks of one name are refused (the guard tells them by name)."""
    found = tuple(hooks)
    names: set[str] = set()
    for hook in found:
        if not isinstance(hook, ActionHook):
            raise ConfigError(f"hooks: {hook!r} is not an ActionHook")
        if hook.name in names:
            raise ConfigError(f"hooks: two hooks are named {hook.name!r}")
        names.add(hook.name)
    return found


def _applying(hooks: tuple[ActionHook, ...], tool: str) -> tuple[ActionHook, ...]:
    return tuple(hook for hook in hooks if hook.applies_to(tool)) if hooks else ()


@contextmanager
def _inside(name: str) -> Iterator[None]:
    token = _RUNNING.set((*_RUNNING.get(), name))
    try:
        yield
    finally:
        _RUNNING.reset(token)


def _arguments(call: ToolCall) -> dict[str, Any]:
    if isinstance(call.arguments, dict):
        return call.arguments
    try:
        parsed = json.loads(call.arguments or "{}")
    except (ValueError, RecursionError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _payload(action: ActionCall) -> str:
    """The call as JSON for ``HARNESS_ACTION``; long text arguments are cut (marked) so that it
    stays whole JSON within :data:`PAYLOAD_CHARS`."""
    result = action.result
    data = {
        "tool": action.tool,
        "arguments": dict(action.arguments),
        "output": None if result is None else result.output[-HOOK_OUTPUT_CHARS:],
        "is_error": None if result is None else result.is_error,
    }
    text = json.dumps(data, default=str)
    if len(text) <= PAYLOAD_CHARS:
        return text
    scale = 0.9 * PAYLOAD_CHARS / len(text)  # each long text shrinks as much as the whole must
    data["arguments"] = {
        name: truncate(value, max(1_000, int(len(value) * scale)))
        if isinstance(value, str)
        else value
        for name, value in action.arguments.items()
    }
    text = json.dumps(data, default=str)
    if len(text) <= PAYLOAD_CHARS:
        return text
    return json.dumps({**data, "arguments": {}, "arguments_cut": True}, default=str)


def _refusal(decision: Decision, answer: str | None) -> str:
    what = f"{decision.subject!r}"
    if decision.source == "unreadable":
        return f"denied: the command cannot be checked ({decision.reason}); write it plainly"
    if answer == "unattended":
        return f"denied: {what} needs a person's approval and nobody is there to ask"
    if answer in ("rejected", "timed_out"):
        said = "rejected it" if answer == "rejected" else "did not answer in time"
        return f"denied: {what} needs a person's approval, and the person {said}"
    rule = f"rule {decision.rule}" if decision.rule else "the default"
    return f"denied by {rule}: {what}"
