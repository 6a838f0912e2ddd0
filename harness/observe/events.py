"""The run's JSON Lines event log.

Components emit event models (:mod:`harness.core.sink`): the kinds and their fields are the
models in :mod:`harness.core.event_schema` (documented in docs/events.md). A run's
:class:`EventLog` stamps the run id, redacts and appends each event to
``<run folder>/events.jsonl``.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from harness.core import nofollow
from harness.core.appender import Appender
from harness.core.errors import ConfigError
from harness.core.event_schema import Event, EventBase, parse_event
from harness.core.redact import Redactor
from harness.core.sink import EventSink

_Line = TypeVar("_Line")

EVENTS_FILE = "events.jsonl"
"""The event log's name inside a run folder."""

STAMP = ("kind", "v", "ts", "run_id")
"""The fields every event begins with, written as they are."""

PREVIEW_CHARS = 200
"""Length a tool call's ``arguments_preview`` is cut to, after redaction (so no secret is cut
in two and half left in)."""


class EventLog:
    """An append-only JSON Lines event log; thread-safe.

    Each event is validated against its model (an unknown kind or a bad field raises
    ValueError: that is a bug in the emitter), gets ``run_id`` filled in, is redacted but for
    its :data:`STAMP` (a tool call's ``arguments_preview`` by the values inside its JSON, as a
    request's arguments are, then cut to :data:`PREVIEW_CHARS`), and is written as one line and flushed, so a killed process leaves at most a
    torn last line (which :func:`read_events` skips). ``echo`` (e.g. a :class:`harness.observe.live.LiveProgress`) receives the same redacted
    event, in the log's order. Without a ``redactor``, a :class:`Redactor` over ``os.environ`` is used.

    The log is reached from ``root`` (a folder above it, default: its own folder) without
    following any link, and every later write must find the very file the first one made
    (:class:`~harness.core.appender.Appender`): a folder renamed and another put in its place, or
    a symlink planted there, makes :meth:`emit` raise :class:`~harness.core.nofollow.UnsafePath`
    once; the log is closed from then on (nothing more is written anywhere).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        run_id: str,
        redactor: Redactor | None = None,
        echo: EventSink | None = None,
        root: str | os.PathLike[str] | None = None,
    ) -> None:
        self.path = Path(path)
        self.root = Path(root) if root is not None else None
        self.run_id = run_id
        self.redactor = redactor if redactor is not None else Redactor()
        self._echo = echo
        self._lock = threading.Lock()
        # on the first event the folders are made: a run that never starts leaves nothing
        self._file = Appender(self.path, root=self.root)

    def emit(self, event: EventBase) -> None:
        fields = event.model_dump(mode="json")
        # the stamp is the harness's own (no secret in it) and a time is new at every event:
        # scanned, it would only push the texts worth remembering out of the redactor's memo
        stamp = {name: fields.pop(name) for name in STAMP}
        stamp["run_id"] = stamp["run_id"] or self.run_id
        preview = fields.get("arguments_preview")
        if isinstance(preview, str):  # by the values inside it, whole, before it is cut
            fields["arguments_preview"] = self.redactor.redact_json(preview)[:PREVIEW_CHARS]
        record = {**stamp, **self.redactor.redact(fields)}
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with self._lock:
            if self._file.closed:
                return
            self._file.write(line.encode("utf-8"))
            if self._echo is not None:  # what the display shows is redacted as the log is
                self._echo.emit(type(event).model_validate(record))


def read_events(
    path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None
) -> list[Event]:
    """Every event in an event log, in order, as :func:`read_lines` reads them (a torn last line
    skipped); the file is read without following a link (below ``root`` when given) and up to
    :data:`~harness.core.nofollow.READ_LIMIT` bytes."""
    return read_lines(path, nofollow.read_bytes(path, root=root), parse_event, "a valid event")


def read_lines(path: object, data: bytes, parse: Callable[[str], _Line], what: str) -> list[_Line]:
    """Each line of ``data``, a log of the harness's own at ``path``, as ``parse`` reads it.

    A last line that does not parse is a write cut short by a crash and is left out; any other
    line that does not parse (``parse`` raises ValueError), or data that is not UTF-8, is a
    :class:`ConfigError` naming the file and line: ``path:3: not {what}: ...``.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        bad_line = err.object[: err.start].count(b"\n") + 1
        raise ConfigError(f"{path}:{bad_line}: not UTF-8 text ({err.reason})") from err
    lines = text.split("\n")
    found: list[_Line] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            found.append(parse(line))
        except ValueError as err:
            if number == len(lines):
                break
            raise ConfigError(f"{path}:{number}: not {what}: {err}") from err
    return found
