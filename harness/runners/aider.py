"""aider as a round's session: ``aider --message-file TASK``, every question answered yes.

aider talks to the gateway as an OpenAI-compatible provider (``OPENAI_API_BASE``), edits files
with SEARCH/REPLACE blocks (``--edit-format diff``), and is set up to run unattended and
offline: no commits of its own (the harness commits the round), no update check, release notes,
analytics, model-warning prompt or URL scraping, and a model-metadata file naming the gateway's
model so that it fetches no model-price table. Its chat history goes to its private home, not
the repository. It reads the repository through git (its repository map), which needs an
author: a ``.gitconfig`` in its home gives one, else aider writes one into the repository's own
configuration. Shell commands it suggests are not run (``--yes-always`` declines them).

aider also reads settings from the repository (``.env``, ``.aider.conf.yml``,
``.aider.model.settings.yml``), which is data: where its requests go is said in the model
settings it reads last (``aider/extra_params``, given with every model's requests, above any
address from the environment or another model setting).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from harness.gateway.gateway import GatewayAddress
from harness.runners.base import ExternalRunner, Invocation
from harness.runners.git_guard import git_folders
from harness.runners.home import home_file

VERSION = "0.86.2"
"""The version the harness is tested with."""
PROVIDER = "openai/"
"""The litellm route by which aider reaches the gateway."""
TASK = "aider.task.md"
METADATA = "aider.model.metadata.json"
SETTINGS = "aider.model.settings.yml"
"""Its model settings, read after the repository's: every model's requests go to the gateway."""
CHAT_HISTORY = "aider.chat.history.md"
INPUT_HISTORY = "aider.input.history"
REPLY_TOKENS = 8_192
"""The longest reply aider is told the model gives."""
USER_LINE = "#### "
"""How aider's chat history writes each line of a message of the user's."""
NOTE_LINE = "> "
"""How aider's chat history marks its own notes (tokens used, files added, edits applied)."""
GITCONFIG = "[user]\n\tname = aider\n\temail = aider@localhost\n"
VERSION_LINE = re.compile(r"^aider \d+\.\d+", re.MULTILINE)
"""How ``aider --version`` begins its answer."""


class AiderRunner(ExternalRunner):
    """aider, unattended and offline but for the gateway; see the module's doc."""

    name = "aider"
    executable = "aider"
    install = (
        "python3 -m venv /opt/harness-agents/aider && "
        f"/opt/harness-agents/aider/bin/pip install aider-chat=={VERSION}"
    )
    wire = "openai-chat"

    def invocation(
        self, task: str, gateway: GatewayAddress, home: Path, workspace: Path
    ) -> Invocation:
        model = PROVIDER + gateway.model
        v1 = gateway.base_url + "/v1"
        settings = [
            {"name": "aider/extra_params", "extra_params": {"api_base": v1, "base_url": v1}}
        ]
        metadata = {
            model: {
                "max_input_tokens": self.model.context_window,  # the loop's model's
                "max_output_tokens": REPLY_TOKENS,
                "input_cost_per_token": 0,
                "output_cost_per_token": 0,
                "litellm_provider": "openai",
                "mode": "chat",
            }
        }
        argv = [
            self.program,
            "--model", model,
            "--message-file", str(home / TASK),
            "--yes-always",
            "--no-auto-commits",
            "--no-dirty-commits",
            "--no-gitignore",
            "--no-check-update",
            "--no-show-release-notes",
            "--analytics-disable",
            "--no-detect-urls",
            "--no-show-model-warnings",
            "--no-pretty",
            "--no-fancy-input",
            "--edit-format", "diff",
            "--model-metadata-file", str(home / METADATA),
            "--model-settings-file", str(home / SETTINGS),
            "--chat-history-file", str(home / CHAT_HISTORY),
            "--input-history-file", str(home / INPUT_HISTORY),
        ]  # fmt: skip
        return Invocation(
            argv=argv,
            env={
                "OPENAI_API_BASE": v1,
                "OPENAI_API_KEY": gateway.token,
                "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                "TERM": "dumb",
            },
            files={
                TASK: task,
                METADATA: json.dumps(metadata),
                SETTINGS: json.dumps(settings),  # JSON is YAML
                ".gitconfig": GITCONFIG,
            },
        )

    def readable(self, workspace: Path) -> list[Path]:
        """The worktree's git folders: aider reads the repository through git."""
        return git_folders(workspace)

    def final_message(self, stdout: str, home: Path) -> str:
        """aider's last reply, from its chat history: after the last message of the user's, the
        last text between aider's own notes (tokens used, edits applied, a lint check's result)."""
        lines = (home_file(home, CHAT_HISTORY) or "").splitlines()
        users = [i for i, line in enumerate(lines) if line.startswith(USER_LINE)]
        if not users:
            return stdout.strip()
        replies = [""]
        for line in lines[users[-1] + 1 :]:
            if not line.startswith(NOTE_LINE):
                replies[-1] += line + "\n"
            elif replies[-1].strip():
                replies.append("")
        return next((text.strip() for text in reversed(replies) if text.strip()), "")

    def version_problem(self, version: str) -> str | None:
        """A program that does not answer ``--version`` as aider does is not aider."""
        if VERSION_LINE.search(version) is None:
            return f"`--version` said {version[:80]!r}, which is not aider's answer"
        return None
