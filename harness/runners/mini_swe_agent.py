"""mini-swe-agent as a round's session: ``mini --yolo --exit-immediately``, one ``bash`` tool.

mini talks to the gateway through litellm's OpenAI route (``model.model_kwargs.api_base``) and
runs each command the model calls its ``bash`` tool with in a fresh shell in the worktree;
the session ends when a command prints ``COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`` first. Set up
to run unattended: its first-run set-up wizard and start-up banner off, its global
configuration in its private home, no cost limit of its own and cost tracking of an unknown
model tolerated (the run's budget holds at the gateway), and one attempt per model request (it
would retry a refusal ten times, minutes apart). The task and these settings reach it in a
configuration file merged over its own ``mini.yaml``; its trajectory is written to its home.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from harness.core.errors import ConfigError
from harness.gateway.gateway import GatewayAddress
from harness.models.base import Model
from harness.runners.base import ExternalRunner, Invocation
from harness.runners.git_guard import git_folders
from harness.runners.home import home_file

VERSION = "2.4.6"
"""The version the harness is tested with."""
CONFIG = "mini.harness.yaml"
"""The task and the gateway's settings, merged over mini's ``mini.yaml`` (JSON is YAML)."""
OWN_CONFIG = "lib/python3*/*-packages/minisweagent/config/mini.yaml"
"""Where mini's own ``mini.yaml`` lies under the environment it is installed in (named by its
path: by its name, mini would read a ``mini.yaml`` of the worktree it runs in first)."""
TRAJECTORY = "mini.trajectory.json"
CONFIG_DIR = ".config/mini-swe-agent"
"""mini's global configuration folder (a ``.env`` it loads), in its private home."""
VERSION_LINE = re.compile(r"mini-swe-agent version (\d+)\.\d+")
"""How ``mini --help`` says its version (on its start-up banner)."""
FIRST_VERSION = 2
"""The first major version that works: 1.x takes one ``--config`` file, the last given."""
PROBLEM_1X = "it reads one --config file and no task from it, and asks for the task at a terminal"
NOT_YAML = re.compile("[\x7f-\x9f\u2028\u2029\ufffe\uffff]")
"""Characters JSON writes as they are but YAML does not read so (mini's reader refuses DEL, C1
and the non-characters; NEL and the line and paragraph separators are line breaks to it, which
drop the spaces around them): written as ``\\uXXXX`` escapes."""


class _Message(BaseModel):
    role: str
    content: str | list[object] | None = None


class _Info(BaseModel):
    submission: str = ""
    exit_status: str = ""


class _Trajectory(BaseModel):
    """What the runner reads of mini's trajectory file (the rest is ignored: pydantic's default)."""

    info: _Info
    messages: list[_Message]


class MiniSweAgentRunner(ExternalRunner):
    """mini-swe-agent, unattended and offline but for the gateway; see the module's doc."""

    name = "mini-swe-agent"
    executable = "mini"
    install = (
        "python3 -m venv /opt/harness-agents/mini-swe-agent && "
        f"/opt/harness-agents/mini-swe-agent/bin/pip install mini-swe-agent=={VERSION}"
    )
    wire = "openai-chat"
    version_args = ("--help",)

    def __init__(self, model: Model, **options: Any) -> None:
        super().__init__(model, **options)
        self.own_config = own_config(self.program)
        if self.own_config is None:
            raise ConfigError(
                f"agent.path: mini-swe-agent's own mini.yaml is not where it installs it beside "
                f"{self.program} ({OWN_CONFIG}); install it with: {self.install}"
            )

    def invocation(
        self, task: str, gateway: GatewayAddress, home: Path, workspace: Path
    ) -> Invocation:
        config = {
            "run": {"task": task},
            "model": {
                "model_kwargs": {"api_base": gateway.base_url + "/v1"},
                "cost_tracking": "ignore_errors",
            },
        }
        argv = [
            self.program,
            "--model", "openai/" + gateway.model,
            "--yolo",
            "--exit-immediately",
            "--cost-limit", "0",
            "--output", str(home / TRAJECTORY),
            "--config", str(self.own_config),
            "--config", str(home / CONFIG),
        ]  # fmt: skip
        return Invocation(
            argv=argv,
            env={
                "OPENAI_API_KEY": gateway.token,
                "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                "MSWEA_CONFIGURED": "true",
                "MSWEA_SILENT_STARTUP": "1",
                "MSWEA_GLOBAL_CONFIG_DIR": str(home / CONFIG_DIR),
                "MSWEA_COST_TRACKING": "ignore_errors",
                "MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT": "1",
            },
            files={CONFIG: yaml_json(config)},
        )

    def readable(self, workspace: Path) -> list[Path]:
        """The worktree's git folders: its commands may read the repository with git."""
        return git_folders(workspace)

    def final_message(self, stdout: str, home: Path) -> str:
        """What mini submitted (the output after its marker line), else its last reply's text."""
        try:
            trajectory = _Trajectory.model_validate_json(home_file(home, TRAJECTORY) or "")
        except ValidationError:
            return stdout.strip()
        if trajectory.info.submission.strip():
            return trajectory.info.submission.strip()
        replies = [m.content for m in trajectory.messages if m.role == "assistant"]
        last = replies[-1] if replies else None
        return last.strip() if isinstance(last, str) else ""

    def version_problem(self, version: str) -> str | None:
        """mini 1.x (1.17.5 tried): with the runner's two ``--config`` files it reads only the
        second, without mini.yaml's prompts, and asks for a task on its input."""
        found = VERSION_LINE.search(version)
        if found is not None and int(found.group(1)) < FIRST_VERSION:
            return f"mini-swe-agent {found.group(1)}.x is known not to work ({PROBLEM_1X})"
        return None


def yaml_json(value: object) -> str:
    """``value`` as JSON that a YAML reader reads back as ``value``: every character past ASCII
    as it is (YAML reads ``\\ud83d\\ude00`` as two halves of a character), but those it
    refuses or changes escaped (:data:`NOT_YAML`)."""
    text = json.dumps(value, ensure_ascii=False)
    return NOT_YAML.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def own_config(program: str) -> Path | None:
    """mini's own ``mini.yaml`` in the environment whose ``bin`` holds ``program`` (a link to it
    followed), under its newest Python where it has several; None when it is not there."""
    found = Path(program).resolve().parent.parent.glob(OWN_CONFIG)
    return max(found, key=_python_version, default=None)


def _python_version(config: Path) -> tuple[int, ...]:
    """The version in the name of the ``lib/python3.X`` folder that holds ``config``."""
    return tuple(map(int, re.findall(r"\d+", config.parents[3].name)))
