"""Where components report what happened. The full event log builds on this seam."""

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
