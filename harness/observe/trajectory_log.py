"""The run's trajectory, written step by step from the run's events.

A :class:`TrajectoryLog` is a sink of the run's events (:mod:`harness.core.event_schema`): of
each moment it keeps it appends one JSON line, the record of
:mod:`harness.core.trajectory_schema` under the event's kind, to ``<run folder>/trajectory.jsonl``
in a single write, so a process killed at any moment leaves
every earlier line whole and at most a torn last one (which
:func:`~harness.observe.trajectory.read_trajectory` skips). A text longer than ``inline_chars``
goes, once, to ``<run folder>/trajectory-blobs/<sha256>`` before the line that names it.
Everything is redacted first (a request arrives redacted by the
:class:`~harness.models.budget.MeteredModel` that sent it, and is kept as sent).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any, cast

import orjson
from pydantic_core import to_json, to_jsonable_python

from harness.core import nofollow
from harness.core.appender import Appender
from harness.core.event_schema import EventBase, ModelCall, SessionEnd, ToolCallEvent
from harness.core.exchange import Exchange
from harness.core.redact import Redactor
from harness.core.text_memo import TextMemo
from harness.core.trajectory_schema import (
    TRAJECTORY_VERSION,
    GateStep,
    RecordBase,
    RoundBegin,
    RoundFinish,
    RunBegin,
    SessionBegin,
    Text,
    VerdictStep,
    record_of,
)
from harness.observe.trajectory import BLOBS_DIR, Message

INLINE_CHARS = 2_000
"""Texts up to this length stay in their line; longer ones are stored once by hash."""

_LONG_FIELDS = ("output_tail",)
"""The fields of a record written by :meth:`TrajectoryLog._record` whose text may be long enough
to go to the side folder (a tool call's observation is stored by :meth:`TrajectoryLog.tool_call`)."""

HASHED_CHARS = 2_000_000
"""Characters of long texts whose hash is kept (the latest ones), to be found again without
hashing them: an observation is recorded in its step, then in the next request."""

_ROUND_LEVEL = (RunBegin, RoundBegin, GateStep, VerdictStep, RoundFinish)
"""Records of the run or the round, in no session."""


class TrajectoryLog:
    """An append-only trajectory; thread-safe. A sink of the run's events
    (:class:`~harness.core.sink.EventSink`): :meth:`emit` writes the record of each moment it
    keeps, and nothing else writes to it.

    Records get ``round`` (from the last :class:`RoundBegin`) and ``session`` where they have
    none: sessions are numbered by :class:`SessionBegin` and nest, the innermost open one (a
    subagent's) being current until a ``session_end`` event closes it and its parent's is current
    again. The file is appended as the event log is (:class:`~harness.core.appender.Appender`):
    reached from ``root`` without following a link, kept open, and written only while it is
    still the file the first line made (else :class:`~harness.core.nofollow.UnsafePath`, and the
    log is closed).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        redactor: Redactor | None = None,
        root: str | os.PathLike[str] | None = None,
        inline_chars: int = INLINE_CHARS,
    ) -> None:
        self.path = Path(path)
        self.blobs = self.path.with_name(BLOBS_DIR)
        self.root = Path(root) if root is not None else None
        self.redactor = redactor if redactor is not None else Redactor()
        self.inline_chars = inline_chars
        self._lock = threading.Lock()
        self._file = Appender(self.path, root=self.root)
        self._round: int | None = None
        self._open: list[int] = []  # the sessions begun and not ended, the current one last
        self._sessions = 0
        self._stored: set[str] = set()
        self._digest = TextMemo(_sha256, HASHED_CHARS)
        self._tools: tuple[object, str] = (None, "")  # the last schemas sent, and their hash
        self._wire: tuple[bytes, Any] = (b"", None)  # the last rest of a body's bytes, redacted
        self._previous: dict[tuple[int | None, str], list[Message]] = {}

    def emit(self, event: EventBase) -> None:
        """Record the moment ``event`` is, if the trajectory keeps its kind: a model call and a
        tool call with what was said (their lines built here, the hot path), a session's end
        (which closes it and writes nothing), and the others' records
        (:func:`~harness.core.trajectory_schema.record_of`)."""
        kind = type(event)  # by its type, not isinstance: every event of the run comes here
        if kind is ModelCall:
            call = cast(ModelCall, event)
            if call.exchange is not None:  # reported without what was said: not a step
                self.model_call(call, call.exchange)
        elif kind is ToolCallEvent:
            step = cast(ToolCallEvent, event)
            if step.observation is not None:
                self.tool_call(step, step.observation)
        elif kind is SessionEnd:
            self._end_session()
        else:
            record = record_of(event)
            if record is not None:
                self._record(record)

    def _record(self, record: RecordBase) -> None:
        with self._lock:
            if isinstance(record, RoundBegin):
                self._round = record.round
                self._open.clear()
                self._previous.clear()  # no request of an earlier round comes again
            elif isinstance(record, SessionBegin):
                self._sessions += 1
                self._open.append(self._sessions)
            data = record.model_dump(mode="json")
            if data["round"] is None:
                data["round"] = self._round
            if data["session"] is None and not isinstance(record, _ROUND_LEVEL):
                data["session"] = self._session
            data = self.redactor.redact(data)
            for name in _LONG_FIELDS:
                if isinstance(data.get(name), str):
                    data[name] = self._text(data[name])
            self._write(data)

    def _end_session(self) -> None:
        """The current session is over: later steps belong to the one around it (if any)."""
        with self._lock:
            if self._open:
                ended = self._open.pop()
                for key in [key for key in self._previous if key[0] == ended]:
                    del self._previous[key]  # no request of it comes again

    @property
    def _session(self) -> int | None:
        return self._open[-1] if self._open else None

    def model_call(self, event: ModelCall, exchange: Exchange) -> None:
        """Record one call: the request (redacted already) as the change since the previous
        request of the same session and role, the reply redacted (its tool calls' arguments by
        the values inside them, as a request's are). With ``sent`` (the body on
        the wire), its messages and tools are what is kept, and the rest of it beside them."""
        messages, tools, reply = exchange.messages, exchange.tools, exchange.reply
        calls, sent, role = reply.tool_calls, reply.sent, event.role
        wire = None
        if sent is not None and isinstance(sent.get("messages"), list):
            messages, tools = sent["messages"], sent.get("tools")
            # null where they stood: the body is rebuilt in its order on the wire
            wire = {k: None if k in ("messages", "tools") else v for k, v in sent.items()}
        with self._lock:
            keep = _follow(self._previous.setdefault((self._session, role), []), messages)
            schemas = None
            if tools:
                # the same schemas at every step: the same list, or (on the wire) an equal one
                if tools is not self._tools[0] and tools != self._tools[0]:
                    self._tools = (tools, self._store(json.dumps(tools, ensure_ascii=False)))
                schemas = self._tools[1]
            # A ModelStep's fields, as its model would dump them (the tests hold the two
            # together): validating and dumping a model at every call cost more than the rest
            # of the record.
            redact, redact_json = self.redactor.redact_text, self.redactor.redact_json
            data = {
                "kind": "model_call",
                "v": TRAJECTORY_VERSION,
                "ts": event.ts,
                "round": self._round,
                "session": self._session,
                "role": role,
                "model": event.model,
                "request": {
                    "keep": keep,
                    "messages": [self._message(m) for m in messages[keep:]],
                    "tools": schemas,
                    "max_tokens": exchange.max_tokens,
                    "wire": None if wire is None else self._redacted(wire),
                },
                "reply": {
                    "content": None if reply.content is None else redact(reply.content),
                    "tool_calls": [
                        {
                            "id": call.id,
                            "name": call.name,
                            "arguments": redact_json(call.arguments_json),
                        }
                        for call in calls
                    ],
                    "reasoning": None if reply.reasoning is None else redact(reply.reasoning),
                    **({"truncated": True} if reply.truncated else {}),
                },
                "usage": reply.usage,
                "latency": event.latency,
            }
            self._write(data)

    def _redacted(self, wire: dict[str, Any]) -> Any:
        """The rest of a body (model, limits, options) redacted: the same at every call of a
        session, it is redacted again only when its bytes differ from the previous call's (not
        its value: ``1``, ``1.0`` and ``true`` are equal in Python and differ on the wire)."""
        encoded = _line(wire)
        if encoded != self._wire[0]:
            self._wire = (encoded, self.redactor.redact(wire))
        return self._wire[1]

    def tool_call(self, call: ToolCallEvent, observation: str) -> None:
        """Record one tool call, its line built as :class:`ToolStep` would dump it (as a model
        call's is): the arguments (by value, as a reply's) and the observation redacted, a long
        observation stored once."""
        # the whole arguments, uncut: redacted with the reply that made the call, found again
        arguments = self.redactor.redact_json(call.arguments_preview)
        observation = self.redactor.redact_text(observation)
        with self._lock:
            self._write(
                {
                    "kind": "tool_call",
                    "v": TRAJECTORY_VERSION,
                    "ts": call.ts,
                    "round": self._round,
                    "session": self._session,
                    "step": call.step or 0,
                    "call_id": call.call_id,
                    "name": call.name,
                    "arguments": arguments,
                    "observation": self._text(observation),
                    "exit_code": call.exit_code,
                    "is_error": call.is_error,
                    "duration": call.duration,
                }
            )

    def _message(self, message: Message) -> Message:
        content = message.get("content")
        if isinstance(content, str) and len(content) > self.inline_chars:
            return {**message, "content": self._text(content)}
        return message

    def _text(self, text: str) -> Text | dict[str, Any]:
        """``text`` itself when short, else the fields of its :class:`Blob`."""
        if len(text) <= self.inline_chars:
            return text
        return {"blob": self._store(text), "chars": len(text)}  # a Blob's fields

    def _store(self, text: str) -> str:
        """Write ``text`` to the side folder once; its hash.

        A blob is not fsynced, as the lines are not: a killed process leaves it whole (it is
        renamed into place) or absent, and it is written before the line that names it."""
        digest = self._digest.of(text)
        if digest not in self._stored and not self._file.closed:
            data = text.encode("utf-8")
            nofollow.write_atomic(self.blobs / digest, data, root=self.root, durable=False)
            self._stored.add(digest)
        return digest

    def _write(self, data: dict[str, Any]) -> None:
        """One line, in one write, to the file the first line made."""
        if not self._file.closed:
            self._file.write(_line(data))


_LINE_OPTIONS = orjson.OPT_UTC_Z | orjson.OPT_APPEND_NEWLINE
"""A line as pydantic writes it (UTC as ``Z``), ended."""


def _line(data: dict[str, Any]) -> bytes:
    """``data`` as one compact UTF-8 JSON line, the bytes pydantic-core would write, made by
    orjson (a quarter of the instructions). What orjson does not know (a model, a path) is
    given to it as pydantic makes it JSON; what it refuses (an integer past 64 bits, a key
    that is not a string) makes the line pydantic-core's."""
    try:
        return orjson.dumps(data, default=to_jsonable_python, option=_LINE_OPTIONS)
    except orjson.JSONEncodeError:
        return to_json(data) + b"\n"


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _follow(previous: list[Message], messages: list[Message]) -> int:
    """How many messages at the start of ``messages`` are those of ``previous`` (the very same
    objects, or equal ones), ``previous`` made a copy of ``messages`` meanwhile.

    At once when the whole previous request is still there (a step added to it): the new
    messages are appended to ``previous`` and the two lists compared whole, which takes the very
    same objects as equal without looking inside them, and copies nothing but what was added."""
    kept = len(previous)
    if len(messages) >= kept:
        previous.extend(messages[kept:])
        if previous == messages:
            return kept
        del previous[kept:]
    keep = 0
    for before, now in zip(previous, messages, strict=False):
        if before is not now and before != now:
            break
        keep += 1
    previous[:] = messages
    return keep
