"""A run's record: the one sink its components emit each moment to, once.

Every moment of a run is one event (:mod:`harness.core.event_schema`), emitted by one call to
this sink, which writes both files of the run folder from it: the event log
(:class:`~harness.observe.events.EventLog`, every event's fields, also handed to the live display
and OpenTelemetry) and the trajectory (:class:`~harness.observe.trajectory_log.TrajectoryLog`,
the moments it keeps, with what was said). No component writes either file any other way.
"""

from __future__ import annotations

import os
from pathlib import Path

from harness.core.redact import Redactor
from harness.core.sink import EventSink, Tee
from harness.observe.events import EVENTS_FILE, EventLog
from harness.observe.trajectory import TRAJECTORY_FILE
from harness.observe.trajectory_log import TrajectoryLog


def run_record(
    folder: str | os.PathLike[str],
    *,
    run_id: str,
    redactor: Redactor,
    echo: EventSink | None = None,
    root: str | os.PathLike[str] | None = None,
) -> Tee:
    """The sink of the run recorded in ``folder``: each event to its event log (which echoes it,
    redacted, to ``echo``), then to its trajectory; both redacted by ``redactor``, both reached
    from ``root`` without following a link."""
    path = Path(folder)
    return Tee(
        EventLog(path / EVENTS_FILE, run_id=run_id, redactor=redactor, echo=echo, root=root),
        TrajectoryLog(path / TRAJECTORY_FILE, redactor=redactor, root=root),
    )
