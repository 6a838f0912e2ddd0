"""Codex CLI as a round's session: ``[agent] runner = "codex"`` (``codex exec``).

Codex runs non-interactively (``codex exec``, the task on its standard input, its events as
JSON lines on standard output) with a configuration of the harness's own in a private
``CODEX_HOME``: one model provider, the harness's gateway, spoken to in OpenAI's Responses
format with the run's token; its own sandbox off and approvals never asked (the harness's
sandbox is the confinement); no retries (a request the gateway refuses ends the session at
once); no update check, analytics, feedback, history, plugins, apps, web search or subagents.
The repository's own ``.codex`` configuration is not read (the project is not trusted).

Codex knows a model's tools from its catalog; the run's model is not in it, and for an unknown
name Codex offers no ``apply_patch`` tool. So the runner gives it a catalog of one model: the
entry Codex itself ships for its first listed model that uses plain tool calls with the
``apply_patch`` tool (``codex debug models --bundled``), under the run's model's name. When no
such entry can be had Codex runs with its fallback (its shell tool only).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from harness.core.text import toml_value
from harness.gateway.gateway import GatewayAddress
from harness.runners.base import ExternalRunner, Invocation, Least

VERSION = "0.171.0"
"""The version the runner is tested with."""
TOKEN_ENV = "HARNESS_GATEWAY_TOKEN"
CONFIG = "codex/config.toml"
CATALOG = "codex/harness-models.json"
FEATURES_OFF = (
    "plugins",
    "remote_plugin",
    "apps",
    "goals",
    "image_generation",
    "tool_suggest",
    "skill_mcp_dependency_install",
    "api_key_model_discovery",
    "unbounded_connection_retries",
)
"""Features that reach beyond the gateway (a plugin marketplace cloned from the network, model
discovery) or retry without end; subagents are off in ``[agents]``."""
_BUNDLED: dict[tuple[str, int, int], dict[str, Any] | None] = {}
"""What each program (by its path, time and size) answered of the model it ships."""


class CodexRunner(ExternalRunner):
    """Runs ``codex exec`` on each round's task; see the module's doc."""

    name = "codex"
    executable = "codex"
    install = f"npm install --prefix /opt/harness-agents/codex @openai/codex@{VERSION}"
    wire = "openai-responses"
    least = Least(
        "Codex",
        (0, 122, 0),
        "it takes no model catalog, so the run's model gets no apply_patch tool",
    )

    def invocation(
        self, task: str, gateway: GatewayAddress, home: Path, workspace: Path
    ) -> Invocation:
        entry = self.bundled_entry()
        files = {CONFIG: config_toml(gateway, home / CATALOG if entry else None)}
        if entry is not None:
            files[CATALOG] = json.dumps({"models": [{**entry, **_named(gateway.model)}]})
        argv = [
            self.program, "exec", "--json", "--skip-git-repo-check", "--ephemeral",
            "--cd", str(workspace), "-",
        ]  # fmt: skip
        env = {"CODEX_HOME": str(home / "codex"), TOKEN_ENV: gateway.token}
        return Invocation(argv=argv, env=env, stdin=task, files=files)

    def final_message(self, stdout: str, home: Path) -> str:
        """The text of its last agent message."""
        return final_of_events(stdout)

    def bundled_entry(self) -> dict[str, Any] | None:
        """:func:`usable_entry` of what the program says it ships (asked in the sandbox, as its
        version is), asked once per program: its time and size mark a new install."""
        stat = os.stat(self.program)
        key = (self.program, stat.st_mtime_ns, stat.st_size)
        if key not in _BUNDLED:
            try:
                proc = self.probe("debug", "models", "--bundled")
            except (OSError, subprocess.SubprocessError):
                _BUNDLED[key] = None
            else:
                _BUNDLED[key] = usable_entry(proc.stdout) if proc.returncode == 0 else None
        return _BUNDLED[key]


def final_of_events(stdout: str) -> str:
    """The answer in Codex's ``--json`` output: its last ``agent_message`` item's text."""
    answer = ""
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict) or event.get("type") != "item.completed":
            continue
        item = event.get("item")
        if (
            isinstance(item, dict)
            and item.get("type") == "agent_message"
            and isinstance(item.get("text"), str)
        ):
            answer = item["text"].strip()
    return answer


def config_toml(gateway: GatewayAddress, catalog: Path | None) -> str:
    """Codex's ``config.toml`` for one session against ``gateway``."""
    config: dict[str, Any] = {
        "model": gateway.model,
        "model_provider": "harness",
        "approval_policy": "never",
        "sandbox_mode": "danger-full-access",
        "web_search": "disabled",
        "check_for_update_on_startup": False,
        **({"model_catalog_json": str(catalog)} if catalog is not None else {}),
        "model_providers.harness": {
            "name": "harness gateway",
            "base_url": gateway.base_url + "/v1",
            "wire_api": "responses",
            "env_key": TOKEN_ENV,
            "request_max_retries": 0,
            "stream_max_retries": 0,
        },
        "features": dict.fromkeys(FEATURES_OFF, False),
        "agents": {"enabled": False},
        "analytics": {"enabled": False},
        "feedback": {"enabled": False},
        "history": {"persistence": "none"},
    }
    lines = []
    for key, value in config.items():  # the tables last: a key after one would be its own
        if isinstance(value, dict):
            lines += ["", f"[{key}]", *(f"{k} = {toml_value(v)}" for k, v in value.items())]
        else:
            lines.append(f"{key} = {toml_value(value)}")
    return "\n".join(lines) + "\n"


def _named(model: str) -> dict[str, Any]:
    return {"slug": model, "display_name": model, "supports_search_tool": False}


def usable_entry(listed: str) -> dict[str, Any] | None:
    """The catalog entry of ``codex debug models --bundled``'s answer ``listed`` for its first
    model (by priority) with plain tool calls and the ``apply_patch`` tool; None when there is
    none or the answer is not Codex's."""
    try:
        models = json.loads(listed).get("models")
    except (ValueError, AttributeError):
        return None
    if not isinstance(models, list):
        return None
    usable = [
        model
        for model in models
        if isinstance(model, dict)
        and model.get("apply_patch_tool_type") == "freeform"
        and model.get("tool_mode") is None
        and isinstance(model.get("priority"), int)
    ]
    return min(usable, key=lambda model: model["priority"]) if usable else None
