"""The session protocol: what the outer loop needs of whatever runs a round's session.

The harness's own :class:`~harness.agent.agent.Agent` meets it, and so does a runner of an
external coding agent (:mod:`harness.runners`). Every round the outer loop hands the session
the run's metered model (:meth:`Session.with_model`: every request it makes is budgeted,
redacted and recorded there), runs it on the round's task in the round's worktree, and judges
what it left behind; the session's own claim of success is never trusted.

What only some sessions can do is asked for by a protocol of its own, checked with
``isinstance``: :class:`ChecksFit` (refuse a task too big for the model before anything is
created), :class:`TakesTools` (in-process tools beside its own: the loop's MCP servers, the
progress tool) and :class:`TakesAsker` (permission asks that go to a person). A session without
them runs without them: the loop says so where it matters (MCP servers need tools).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from harness.agent.actions import Asker
    from harness.agent.agent import AgentRun
    from harness.agent.ledger import Ledger
    from harness.core.sink import EventSink
    from harness.models.base import Model
    from harness.sandbox import Sandbox
    from harness.tools import Tool


@runtime_checkable
class Session(Protocol):
    """One round's session: a model to talk to, a sandbox to run in, and ``run``."""

    @property
    def model(self) -> Model:
        """The model the session's requests go to (the run's metered one once it runs)."""
        ...

    @property
    def sandbox(self) -> Sandbox | None:
        """Where the session's commands run; None: the default sandbox (``auto``)."""
        ...

    def with_model(self, model: Model) -> Session:
        """A copy that sends every model request to ``model``."""
        ...

    def run(
        self,
        task: str,
        workspace: str | Path = ...,
        *,
        ledger: Ledger | None = ...,
        protect: tuple[str, ...] = ...,
        events: EventSink = ...,
    ) -> AgentRun:
        """Work on ``task`` in ``workspace``; the outcome with its stop reason. A run-wide bound
        that stopped it (budget, time) is its ``interruption``. ``ledger`` is the goal, rules
        and open items a session may keep in view; ``protect`` the paths it must not write."""
        ...


@runtime_checkable
class ChecksFit(Protocol):
    """A session that can tell, before the run, that a task cannot fit its model."""

    def check_fits(self, task: str) -> None:
        """Raise :class:`~harness.core.errors.ConfigError` when ``task`` cannot fit."""
        ...


@runtime_checkable
class TakesTools(Protocol):
    """A session that can use in-process tools beside its own."""

    def with_tools(self, tools: Iterable[Tool]) -> Session:
        """A copy that also has ``tools``."""
        ...


@runtime_checkable
class TakesAsker(Protocol):
    """A session whose permission asks can go to a person."""

    def with_asker(self, asker: Asker | None) -> Session:
        """A copy whose asks go to ``asker``."""
        ...
