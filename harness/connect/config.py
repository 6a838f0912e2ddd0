"""The connectors' settings that loop.toml reads, apart from the connectors themselves, so that
reading a loop.toml imports neither a connector nor the outer loop's results."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from harness.core.section import Section

Occasion = Literal["pass", "escalate"]


WEBHOOK_SECONDS = 20.0
"""How long posting to a webhook may take, seconds, unless its ``timeout`` says otherwise."""


class CiConfig(Section):
    """``[ci]``: after a round passes its checks, push it, open its pull request and wait for the
    host's check runs on its commit; a failed check fails the round, its log the next input."""

    checks: list[str] = []  # names of the check runs to wait for (empty: all of them)
    timeout: float = Field(1800, gt=0)  # seconds per round (also bounded by budget.seconds)
    poll: float = Field(15, gt=0, le=3600)  # seconds between looks
    settle: float = Field(60, ge=0)  # seconds to wait for a first check run to appear
    log_chars: int = Field(4000, ge=200, le=100_000)  # of a failed check's log, fed back
