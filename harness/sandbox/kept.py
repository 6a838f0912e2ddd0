"""One long-lived container per workspace, for the agent's commands (``[sandbox] keep``).

A benchmark instance's image holds its environment around a folder (``/testbed``); the agent
works there round after round, so its commands share one container: started at the first
command with the workspace mounted at the image's folder, entered with ``exec`` for every
command after, and kept for the sandbox's life. It is made with the same bounds and mounts as a
throw-away container (:meth:`~harness.sandbox.container.Container.options`), and its client
stays attached under the same watcher, so it is removed when the harness ends, even by SIGKILL.
A command killed at its timeout or a limit takes the container with it (what it left running
is gone too); the next command starts a new one. The gates never use it: each runs in a
throw-away container of its own, so what the agent left in its container cannot reach them.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path

from harness.sandbox.container import Container, explain_exit, passed_env
from harness.sandbox.engine import ENGINE_SECONDS, call, engine_env, failure, guarded, remove
from harness.sandbox.process import CommandResult, Watch, cannot_start, run_command

KEEP_ALIVE = ("sleep", "infinity")
"""What the kept container runs while it waits for commands: the image needs ``sleep``."""


class KeptContainers:
    """The long-lived containers of ``container``'s image, one per workspace."""

    def __init__(self, container: Container) -> None:
        self.container = container
        self.names: dict[Path, str] = {}
        self._clients: list[subprocess.Popen[bytes]] = []
        self._lock = threading.Lock()
        weakref.finalize(self, _close, container.program, self.names, self._clients)

    def run(
        self,
        command: Sequence[str],
        *,
        cwd: Path,
        workspace: Path,
        timeout: float,
        env: Mapping[str, str],
        max_output: int,
        watch: Watch | None,
    ) -> CommandResult:
        """Run ``command`` in ``workspace``'s container, started first if it has none."""
        since = time.monotonic()
        with self._lock:  # commands at once (subagents) start one container, not two
            name = self.names.get(workspace)
            if name is None:
                started = self._start(workspace, timeout)
                if isinstance(started, CommandResult):
                    return started
                name = started
        box = self.container
        passed = passed_env(env)
        argv = [box.program, "exec", "-i", *box.session(cwd, workspace, sorted(passed))]
        argv += ["--user", f"{os.getuid()}:{os.getgid()}", name]
        argv += box.in_image(command, workspace)
        result = run_command(
            argv, cwd=cwd, timeout=max(timeout - (time.monotonic() - since), 0.05),
            env={**engine_env(), **passed}, max_output=max_output, watch=watch,
            explain=explain_exit(box.limits),
        )  # fmt: skip
        if result.timed_out or result.limit is not None:
            self.stop(workspace)
        return result

    def stop(self, workspace: Path) -> None:
        """Remove ``workspace``'s container, if it has one."""
        name = self.names.pop(workspace, None)
        if name is not None:
            remove(self.container.program, [name])

    def close(self) -> None:
        """Remove every kept container."""
        _close(self.container.program, self.names, self._clients)

    def _start(self, workspace: Path, timeout: float) -> str | CommandResult:
        """Start ``workspace``'s container and wait until it answers: its name, or why not."""
        box = self.container
        since = time.monotonic()
        name = box.new_name()
        argv = [box.program, "run", "--rm", "--name", name, *box.options(workspace)]
        argv += ["--entrypoint", KEEP_ALIVE[0], box.image, *KEEP_ALIVE[1:]]
        client = subprocess.Popen(
            guarded(argv, program=box.program, name=name, when="harness"),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env=engine_env(), start_new_session=True,
        )  # fmt: skip
        self._clients.append(client)
        problem: str | None = "it did not start"
        while time.monotonic() - since < ENGINE_SECONDS:
            problem = failure(box.engine, call(box.program, "exec", name, "true"))
            if problem is None:
                self.names[workspace] = name
                return name
            if client.poll() is not None:
                problem = f"`{box.engine} run` exited with {client.returncode}: {problem}"
                break
            time.sleep(0.1)
        remove(box.program, [name])
        reason = f"the workspace's kept container of {box.image} did not start: {problem}"
        return cannot_start(box.engine, reason, timeout=timeout, since=since)


def _close(program: str, names: dict[Path, str], clients: list[subprocess.Popen[bytes]]) -> None:
    remove(program, list(names.values()))
    names.clear()
    for client in clients:
        try:
            client.wait(timeout=ENGINE_SECONDS)
        except subprocess.TimeoutExpired:
            client.kill()
            client.wait()
    clients.clear()
