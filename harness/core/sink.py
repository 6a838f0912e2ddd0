"""Where components report what happened: ``sink.emit(RoundStart(round=1, max_iterations=3))``.

An event is built as its model from :mod:`harness.core.event_schema` where it happens, so a
wrong field fails there, whatever the sink. A run's :class:`~harness.observe.events.EventLog` is
the sink that stamps the run id, redacts and records them.
"""

from __future__ import annotations

from typing import Protocol

from harness.core.event_schema import EventBase


class EventSink(Protocol):
    """Receives events."""

    def emit(self, event: EventBase) -> None: ...


class NullSink:
    """Discards every event."""

    def emit(self, event: EventBase) -> None:
        return None


NULL_SINK = NullSink()


class Tee:
    """Sends each event to every sink, in order."""

    def __init__(self, *sinks: EventSink) -> None:
        self.sinks = sinks

    def emit(self, event: EventBase) -> None:
        for sink in self.sinks:
            sink.emit(event)
