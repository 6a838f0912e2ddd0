"""Any program as a round's session: ``[agent] runner = "command"``, ``command = [...]``.

The task reaches the program in a file, where an argument holds ``{task_file}`` (replaced by
the file's path), else on its standard input. The gateway's address is in its environment,
in the names the OpenAI and Anthropic clients read (``OPENAI_BASE_URL`` ends in ``/v1``,
``ANTHROPIC_BASE_URL`` does not) and in the harness's own (``HARNESS_GATEWAY_URL``,
``HARNESS_GATEWAY_TOKEN``, ``HARNESS_MODEL``). Its standard output is its answer.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.core.errors import ConfigError
from harness.gateway.gateway import GatewayAddress
from harness.models.base import Model
from harness.runners.base import ExternalRunner, Invocation

TASK_FILE = "{task_file}"
TASK_NAME = "task.md"


class CommandRunner(ExternalRunner):
    """Runs ``command`` (an argv list) on each round's task; see the module's doc."""

    name = "command"
    install = ""
    wire = "openai-chat"
    version_args = ()  # a program of the user's: no version is known not to work

    def __init__(self, model: Model, command: Sequence[str], **options: Any) -> None:
        if (
            isinstance(command, str)
            or not command
            or not all(isinstance(part, str) and part for part in command)
        ):
            raise ConfigError(
                f"agent.command: must be a non-empty list of non-empty strings, got {command!r}"
            )
        self.command = list(command)
        self.executable = command[0]
        super().__init__(model, **options)

    def missing(self) -> str:
        where = "not found" if os.sep in self.executable else "not on PATH"
        return f"agent.command: {self.executable!r} is {where}"

    def readable(self, workspace: Path) -> list[Path]:
        """What the command names by absolute path (its script, its configuration), shown
        read-only: the sandbox's ``/tmp`` is its own, so a program kept under the host's
        ``/tmp`` would not be found there otherwise."""
        return [
            Path(part) for part in self.command[1:] if os.path.isabs(part) and os.path.exists(part)
        ]

    def invocation(
        self, task: str, gateway: GatewayAddress, home: Path, workspace: Path
    ) -> Invocation:
        task_file = str(home / TASK_NAME)
        rest = [part.replace(TASK_FILE, task_file) for part in self.command[1:]]
        in_file = any(TASK_FILE in part for part in self.command[1:])
        v1 = gateway.base_url + "/v1"
        env = {
            "OPENAI_BASE_URL": v1,
            "OPENAI_API_BASE": v1,
            "OPENAI_API_KEY": gateway.token,
            "ANTHROPIC_BASE_URL": gateway.base_url,
            "ANTHROPIC_API_KEY": gateway.token,
            "HARNESS_GATEWAY_URL": gateway.base_url,
            "HARNESS_GATEWAY_TOKEN": gateway.token,
            "HARNESS_MODEL": gateway.model,
        }
        return Invocation(
            argv=[self.program, *rest],
            env=env,
            stdin=None if in_file else task,
            files={TASK_NAME: task} if in_file else {},
        )
