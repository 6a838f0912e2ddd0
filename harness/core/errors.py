"""Exceptions, split by audience.

* :class:`ConfigError` — the developer or user asked for something invalid; raised at
  construction or load time, with a message that names the field or file.
* :class:`ToolError` — something the model should see and correct; becomes an observation.
* :class:`BookkeepingError` — the harness could not record a run's work (git, the disk).
* :class:`Stopped` — a run ends for a named reason (budget, timeout, ...).
"""

from __future__ import annotations

from harness.core.stop import StopReason


class HarnessError(Exception):
    """Base of every error the harness raises on purpose."""


class ConfigError(HarnessError, ValueError):
    """Invalid configuration or input; the message names the field or file."""


class MissingExtra(ConfigError):
    """An optional dependency a feature needs is not installed: the message says how to
    install its extra, from a clone (as the README installs) and from a package index."""

    def __init__(self, field: str, what: str, extra: str) -> None:
        super().__init__(
            f"{field}: {what} is not installed; from a clone of harness: pip install -e "
            f"'.[{extra}]' (from a package index: pip install 'harness[{extra}]')"
        )


class BookkeepingError(HarnessError):
    """The harness could not keep its own records of a run (``git add -A`` of a round refused by
    a nested repository without a commit, a full disk): the run stops with an error and an
    escalation report; never a configuration error, since nothing in loop.toml is wrong."""


class ToolError(HarnessError):
    """A tool refused or failed in a way the model can correct; shown to it as an observation."""


class ScriptExhausted(HarnessError):
    """A ScriptedModel was asked for more replies than its script holds."""


class Stopped(HarnessError):
    """A run must stop now, for a named reason."""

    def __init__(self, reason: StopReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
