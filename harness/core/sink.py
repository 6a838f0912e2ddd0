"""Where components report what happened: ``sink.emit(kind, **data)``.

The kinds and their fields are the models in :mod:`harness.core.event_schema`; a run's
:class:`~harness.observe.events.EventLog` is the sink that validates and records them.
"""

from __future__ import annotations

from typing import Any, Protocol


class EventSink(Protocol):
    """Receives events: ``emit("tool_call", name="read_file", ...)``."""

    def emit(self, kind: str, **data: Any) -> None: ...


class NullSink:
    """Discards every event."""

    def emit(self, kind: str, **data: Any) -> None:
        return None


NULL_SINK = NullSink()


class Tee:
    """Sends each event to every sink, in order."""

    def __init__(self, *sinks: EventSink) -> None:
        self.sinks = sinks

    def emit(self, kind: str, **data: Any) -> None:
        for sink in self.sinks:
            sink.emit(kind, **data)
