"""Where the loop's command hooks (``on_round``, ``on_escalate``) run.

A hook is the person's program, but it runs beside the agent's work: it must not pick up code
the agent wrote. So it runs in an empty folder of its own (outside the workspace, so ``python -m
notify`` finds no ``notify.py`` the agent left there) with ``PYTHONSAFEPATH=1``, and a hook is
not run at all once a file pinned at the run's start (its program among them) has changed.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path

from harness.core.errors import HarnessError
from harness.outer.pins import first_changed
from harness.outer.settings import Settings
from harness.sandbox.process import CommandResult

SAFE_ENV = {"PYTHONSAFEPATH": "1"}
HOOK_SECONDS = 60.0  # how long a hook may run


def run_hook(
    settings: Settings, command: str, *, env: Mapping[str, str], fallback: Path | None = None
) -> CommandResult:
    """Run ``command`` in a fresh empty folder under the loop's hook sandbox, writing only there
    and in the workspace (``fallback``, default the current folder, when it is no folder; named to
    it as ``HARNESS_WORKSPACE``); refused (a :class:`HarnessError`) when a pinned file changed."""
    changed = first_changed(settings.pins)
    if changed is not None:
        raise HarnessError(f"not run: {changed} changed since the run began")
    workspace = settings.workspace
    writable = workspace if workspace.is_dir() else fallback or Path.cwd()
    with tempfile.TemporaryDirectory(prefix="harness-hook-") as here:
        return settings.hooks_sandbox().run(
            command,
            cwd=here,
            workspace=writable,
            writable=[here],
            timeout=HOOK_SECONDS,
            env={**env, "HARNESS_WORKSPACE": str(writable), **SAFE_ENV},
        )
