"""An external coding agent as a round's session, run inside the harness's sandbox.

:class:`ExternalRunner` meets the session protocol (:mod:`harness.agent.session`) for any
program: the round's task goes to it non-interactively, it works in the round's worktree inside
the sandbox with a private ``HOME``, and every model request it makes goes to the harness's
model gateway (:mod:`harness.gateway`) with a token valid for that session only: so the run's
budget, redaction and trajectory hold for it. The provider's key never enters the sandbox.

Under bubblewrap the gateway serves a unix socket bound into the sandbox, and a relay inside
listens on ``127.0.0.1:RELAY_PORT`` of the sandbox's own network namespace
(:mod:`harness.gateway.relay`); without a sandbox, or with the sandbox's network on (the host's
then), the gateway listens on a free port of 127.0.0.1. A subclass says what is particular to its agent
(:meth:`ExternalRunner.invocation`, :meth:`ExternalRunner.final_message`,
:meth:`ExternalRunner.version_problem`); see :mod:`harness.runners.command` for the smallest.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Literal, Self

from harness.agent.agent import AgentRun, AgentStop
from harness.agent.config import AGENT_DEFAULTS, AgentConfig, SessionTimeout
from harness.agent.ledger import Ledger
from harness.core import held_folders
from harness.core.errors import ConfigError, Stopped
from harness.core.event_schema import SessionEnd, SessionStart
from harness.core.section import check_field, check_value
from harness.core.sink import NULL_SINK, EventSink
from harness.core.stop import StopReason
from harness.core.text import UNPAIRED
from harness.gateway.gateway import Ending, Gateway, GatewayAddress
from harness.models.base import Model
from harness.models.budget import MeteredModel, metered
from harness.runners.git_guard import GIT_OFF, REFUSING_HOOK, head_of, keep_head
from harness.runners.home import remove_scratch, tail, write_files
from harness.sandbox import Sandbox, default_sandbox
from harness.sandbox.limits import MB

WireName = Literal["openai-chat", "openai-responses", "anthropic"]
RELAY_PORT = 48_213
"""The port of 127.0.0.1 the relay listens on inside a sandbox's own network namespace."""
PROBE_SECONDS = 30.0
"""How long the program may take to say its version, or what it ships (a probe)."""
OUTPUT_PASSED = "its output passed [sandbox] output_mb"
PRELOAD: dict[WireName, tuple[str, ...]] = {
    "anthropic": ("/messages",),
    "openai-responses": ("/responses",),
}
"""The gateway's endpoints made ready as it starts, for an agent of each wire (litellm's import
takes seconds: not in the way of the agent's first request)."""


@dataclass(frozen=True)
class Invocation:
    """How to start the agent on one task.

    ``argv``: the whole command line (``argv[0]`` the program, :attr:`ExternalRunner.program`);
    ``env``: variables set on top of the sandbox's allow-list; ``stdin``: written to its
    standard input (else none); ``files``: written under its private HOME before it starts
    (relative path -> text: its configuration).
    """

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    stdin: str | None = None
    files: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Least:
    """The first version of an agent known to work, and what the versions before it lack."""

    product: str
    """The agent's name as its makers write it."""
    version: tuple[int, int, int]
    lacks: str

    def problem(self, said: str) -> str | None:
        """Why the version ``said`` (``--version``'s answer, holding ``X.Y.Z``) does not work."""
        found = re.search(r"(\d+)\.(\d+)\.(\d+)", said)
        if found is None:
            return f"its --version said {said[:80]!r}, not a {self.product} version"
        if tuple(map(int, found.groups())) < self.version:
            first = ".".join(map(str, self.version))
            return (
                f"{self.product} {found.group(0)} is known not to work ({self.lacks}); "
                f"{first} or later is needed"
            )
        return None


class ExternalRunner:
    """Runs an external agent as a round's session (a :class:`~harness.agent.session.Session`).

    ``model``: what answers the agent's requests (the outer loop hands the run's metered one in
    with :meth:`with_model`). ``path``: the agent's program (default: :attr:`executable` found on
    ``PATH``). ``max_requests``: model requests a session may make (its steps); one more is
    refused and ends it with ``max_steps``. ``timeout``: seconds a session may take
    (``[agent] session_timeout``).
    Not found, or a version known not to work: :class:`ConfigError` naming the install command.
    """

    name: ClassVar[str]
    """The runner's name in loop.toml (``[agent] runner``)."""
    executable: str
    """The program looked for on ``PATH`` (a command runner's: its command's first word)."""
    install: ClassVar[str]
    """The exact command that installs it, said when it is missing."""
    wire: ClassVar[WireName]
    """The format its model requests are in (all are served; this one is said in its env)."""
    version_args: ClassVar[tuple[str, ...]] = ("--version",)
    least: ClassVar[Least | None] = None
    """The first version known to work (else none is known not to)."""

    def __init__(
        self,
        model: Model,
        *,
        path: str | os.PathLike[str] | None = None,
        sandbox: Sandbox | None = None,
        max_requests: int = AGENT_DEFAULTS.max_steps,
        timeout: float = AGENT_DEFAULTS.session_timeout,
    ) -> None:
        check_field(AgentConfig, "max_steps", max_requests)  # [agent] max_steps: its requests
        self.model = model
        self.sandbox = sandbox
        self.max_requests = max_requests
        self.timeout: float = check_value(SessionTimeout, timeout, "timeout")
        self.program = self._find(path)
        self._check_version()

    def invocation(
        self, task: str, gateway: GatewayAddress, home: Path, workspace: Path
    ) -> Invocation:
        """The command line, environment, input and files that start the agent on ``task``."""
        raise NotImplementedError

    def final_message(self, stdout: str, home: Path) -> str:
        """The agent's last answer: by default its standard output, trimmed."""
        return stdout.strip()

    def readable(self, workspace: Path) -> list[Path]:
        """Paths outside ``workspace`` the agent may read (shown read-only in the sandbox)."""
        return []

    def version_problem(self, version: str) -> str | None:
        """Why the version the agent reports (``--version``'s output) is known not to work:
        by default, it is not :attr:`least` or later."""
        return None if self.least is None else self.least.problem(version)

    def with_model(self, model: Model) -> Self:
        twin = copy.copy(self)
        twin.model = model
        return twin

    def run(
        self,
        task: str,
        workspace: str | Path = ".",
        *,
        ledger: Ledger | None = None,
        protect: tuple[str, ...] = (),
        events: EventSink = NULL_SINK,
    ) -> AgentRun:
        """Run the agent on ``task`` in ``workspace`` until it exits, or a bound ends it.

        ``ledger`` is not used: the agent keeps its own context. ``protect`` is not shown to it:
        the outer loop fails a round whose changes touch those paths. A character of ``task``
        that UTF-8 cannot hold (an unpaired surrogate) reaches the agent as U+FFFD.
        """
        task = UNPAIRED.sub("\ufffd", task)
        folder = Path(workspace).resolve()
        if not folder.is_dir():
            raise ConfigError(f"workspace: {folder} is not a folder")
        model = metered(self.model, events=events)
        sandbox = self._sandbox()
        model.events.emit(SessionStart(role="author", model=model.name))  # where its calls go
        scratch = held_folders.make("harness-agent-")
        try:
            return self._session(task, folder, model, sandbox, scratch)
        finally:
            model.events.emit(SessionEnd())
            remove_scratch(scratch)

    def _sandbox(self) -> Sandbox:
        sandbox = self.sandbox or default_sandbox()
        if sandbox.backend not in ("bwrap", "none"):
            raise ConfigError(
                f"runner: {self.name} runs under the bwrap or none sandbox backend, "
                f"not {sandbox.backend!r}"
            )
        return sandbox

    def _find(self, path: str | os.PathLike[str] | None) -> str:
        """The agent's program: ``path``, or :attr:`executable` found on ``PATH``."""
        if path is not None:
            given = Path(path).expanduser()
            if not given.is_file() or not os.access(given, os.X_OK):
                raise ConfigError(f"agent.path: {given} is not an executable file")
            return str(given.absolute())
        found = shutil.which(self.executable)
        if found is None:
            raise ConfigError(self.missing())
        return os.path.abspath(found)  # a relative entry of PATH: not the worktree's program

    def missing(self) -> str:
        """What to say when the program is nowhere to be found."""
        return (
            f"agent.runner: {self.name!r} needs {self.executable!r}, which is not on PATH; "
            f"install it with: {self.install} (or name it in [agent] path)"
        )

    def own_folder(self) -> list[Path]:
        """The program's folder, shown read-only to the probe and the session (the sandbox's
        ``/tmp`` is its own); not when it holds the home folder, whose secrets stay hidden."""
        folder = Path(self.program).parent
        return [] if Path.home().resolve().is_relative_to(folder.resolve()) else [folder]

    def probe(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run the program with ``args`` (its version, what it knows) as a session starts it:
        inside the sandbox, with the sandbox's environment, in a folder of its own that is its
        HOME too, its :meth:`own_folder` shown read-only; never on the host with the harness's
        keys."""
        with tempfile.TemporaryDirectory(prefix="harness-probe-") as folder:
            command, env = self._sandbox().wrap(
                [self.program, *args], cwd=folder, env={"HOME": folder},
                readonly=self.own_folder(),
            )  # fmt: skip
            return subprocess.run(
                command, cwd=folder, env=env, capture_output=True, text=True, check=False,
                timeout=PROBE_SECONDS, stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip

    def _check_version(self) -> None:
        if not self.version_args:
            return
        try:
            proc = self.probe(*self.version_args)
        except (OSError, subprocess.SubprocessError) as exc:
            raise ConfigError(f"agent.path: {self.program} could not be started: {exc}") from exc
        problem = self.version_problem((proc.stdout or proc.stderr).strip())
        if problem:
            raise ConfigError(f"agent.runner: {self.name}: {problem}; install a working one with: "
                              f"{self.install}")  # fmt: skip

    def _session(
        self, task: str, workspace: Path, model: MeteredModel, sandbox: Sandbox, scratch: Path
    ) -> AgentRun:
        home = scratch / "home"
        hooks = home / ".harness-git-hooks"
        hooks.mkdir(parents=True)
        for hook in ("pre-commit", "commit-msg", "pre-push"):
            (hooks / hook).write_text(REFUSING_HOOK)
            (hooks / hook).chmod(0o755)
        # A network namespace of its own: the gateway's socket is bound in and a relay inside
        # listens on its 127.0.0.1; sharing the host's network, the agent reaches the
        # gateway's own port (a fixed port there would be the host's, and shared).
        relayed = sandbox.backend == "bwrap" and not sandbox.network
        socket_path = scratch / "gateway.sock" if relayed else None
        usage_before = model.meter.usage
        head = head_of(workspace)
        with Gateway(
            model, max_requests=self.max_requests, socket_path=socket_path,
            preload=PRELOAD.get(self.wire, ()),
        ) as gateway:  # fmt: skip
            inside = f"http://127.0.0.1:{RELAY_PORT}" if socket_path is not None else None
            invocation = self.invocation(task, gateway.address(inside), home, workspace)
            write_files(home, invocation.files)
            argv = invocation.argv
            if socket_path is not None:
                relay = [sys.executable, "-m", "harness.gateway.relay"]
                argv = [*relay, str(socket_path), str(RELAY_PORT), "--", *argv]
            git = {name: value.format(home=home) for name, value in GIT_OFF.items()}
            env = {**git, **invocation.env, "HOME": str(home)}
            command, full_env = sandbox.wrap(
                argv, cwd=workspace, workspace=workspace, env=env, writable=[home],
                readonly=[*self.own_folder(), *self.readable(workspace)],
                sockets=[socket_path] if socket_path is not None else (),
            )  # fmt: skip
            code, why = self._wait(command, full_env, workspace, invocation.stdin, gateway,
                                   model, scratch, sandbox.limits.output_mb * MB)  # fmt: skip
        keep_head(workspace, head)
        stdout = tail(scratch / "stdout")
        stderr = tail(scratch / "stderr")
        stop, message, interruption = _outcome(code, why, gateway.ending, stderr, self.timeout)
        final = self.final_message(stdout, home) if stop is AgentStop.ANSWERED else None
        return AgentRun(
            final=final or None,
            messages=[],
            steps=gateway.requests,
            usage=model.meter.usage - usage_before,
            stop_reason=stop,
            stop_message=message,
            interruption=interruption,
        )

    def _wait(
        self,
        command: list[str],
        env: dict[str, str],
        workspace: Path,
        stdin: str | None,
        gateway: Gateway,
        model: MeteredModel,
        scratch: Path,
        output_bytes: int,
    ) -> tuple[int | None, Literal["exited", "gateway", "timeout", "budget_time", "output"]]:
        """Start the agent and wait until it exits, the gateway ends it, its time is up or it
        has written more than ``output_bytes`` (its standard output and error together)."""
        left = model.meter.remaining_seconds()
        limit = self.timeout if left is None else min(self.timeout, left)
        deadline = time.monotonic() + limit
        streams = (scratch / "stdout", scratch / "stderr")
        with streams[0].open("wb") as out, streams[1].open("wb") as err:
            proc = subprocess.Popen(
                command, cwd=workspace, env=env, stdout=out, stderr=err,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                start_new_session=True,
            )  # fmt: skip
        if stdin is not None:
            threading.Thread(target=_feed, args=(proc, stdin), daemon=True).start()
        try:
            while True:
                code = proc.poll()
                if code is not None:
                    return code, "exited"
                if gateway.ended.wait(0.05):
                    return None, "gateway"
                if time.monotonic() >= deadline:
                    return None, "timeout" if limit == self.timeout else "budget_time"
                if sum(path.stat().st_size for path in streams) > output_bytes:
                    return None, "output"
        finally:
            _kill(proc)


def _outcome(
    code: int | None, why: str, ending: Ending | None, stderr: str, timeout: float
) -> tuple[AgentStop, str, Stopped | None]:
    """The session's stop: its reason, its message, and the run-wide stop behind it."""
    if ending is not None:  # refused for good: whatever the agent did next, that ends it
        if ending.reason == "stopped":
            return AgentStop.INTERRUPTED, ending.message, ending.stopped
        if ending.reason == "requests":
            return AgentStop.MAX_STEPS, ending.message, None
        assert ending.error is not None
        raise ending.error  # the model failed after its retries: as for the built-in agent
    if why == "timeout":
        return AgentStop.TIMED_OUT, f"the agent ran past its time limit of {timeout:g}s", None
    if why == "output":
        return AgentStop.EXITED, f"the agent was stopped: {OUTPUT_PASSED}", None
    if why == "budget_time":
        stop = Stopped(StopReason.TIMEOUT, "the run's time budget was used: the agent was stopped")
        return AgentStop.INTERRUPTED, stop.message, stop
    if code == 0:
        return AgentStop.ANSWERED, "the agent exited with code 0", None
    last = stderr.strip().splitlines()[-5:]
    detail = (": " + " | ".join(last)) if last else ""
    return AgentStop.EXITED, f"the agent exited with code {code}{detail}", None


def _feed(proc: subprocess.Popen[bytes], text: str) -> None:
    assert proc.stdin is not None
    try:
        proc.stdin.write(text.encode())
        proc.stdin.close()
    except OSError:  # the agent ended, or closed its input, before reading it all
        pass


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """End the agent and whatever it started (its session's process group; bwrap's namespace)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
    proc.wait()
