"""A spec's loop with its own run id and event log: what every command that runs a loop needs."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from harness.assemble.build import build_loop, mcp_servers, run_folder
from harness.assemble.named_models import OverrideError, Overrides
from harness.core.errors import ConfigError
from harness.core.sink import EventSink
from harness.models.base import Model
from harness.observe.record import run_record
from harness.outer.loop import OuterLoop
from harness.outer.options import new_run_id
from harness.spec.loop_spec import LoopSpec
from harness.tools import Tool


def recorded_loop(
    spec: LoopSpec,
    *,
    overrides: Overrides | None = None,
    run_id: str | None = None,
    echo: EventSink | None = None,
    tools: Sequence[Tool] = (),
    start_servers: bool = True,
    model: Model | None = None,
    wrap: Callable[[Model], Model] | None = None,
) -> OuterLoop:
    """``spec``'s loop, its record (event log and trajectory, from one sink, redacted) under
    ``<root>/.harness/runs/<run id>/``.

    ``echo`` also receives every event (the live display). ``tools`` are given to the agent
    beside the built-ins; with ``start_servers`` the loop starts and stops the spec's ``[[mcp]]``
    servers itself (callers that share servers between loops pass their tools instead).
    ``model`` answers for the author and the critic whatever the spec names (a replay's);
    ``wrap`` turns each model the spec names into the one the loop calls (a live replay's).
    An error in the spec names its loop.toml; one in a flag or variable names that.
    """
    run_id = run_id or new_run_id()
    try:
        redactor = spec.redactor()
        events = run_record(
            run_folder(spec.root, run_id), run_id=run_id, redactor=redactor, echo=echo,
            root=spec.root,
        )  # fmt: skip
        return build_loop(
            spec,
            overrides=overrides or Overrides(),
            events=events,
            run_id=run_id,
            redact=redactor.redact_text,
            tools=tools,
            mcp=mcp_servers(spec) if start_servers else (),
            model=model,
            wrap=wrap,
        )
    except OverrideError:
        raise  # the flag or variable is named; loop.toml is not to blame
    except ConfigError as exc:
        if str(exc).startswith(str(spec.source)):
            raise
        raise ConfigError(f"{spec.source}: {exc}") from exc
