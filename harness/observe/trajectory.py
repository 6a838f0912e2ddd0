"""The run's trajectory, read back whole: its records, its requests rebuilt, its long texts.

A :class:`~harness.observe.trajectory_log.TrajectoryLog` writes ``<run folder>/trajectory.jsonl``
one JSON line per record (:mod:`harness.core.trajectory_schema`), a process killed at any moment
leaving every earlier line whole and at most a torn last one (which :func:`read_trajectory`
skips); texts longer than its ``inline_chars`` are in ``<run folder>/trajectory-blobs/<sha256>``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core import nofollow
from harness.core.errors import ConfigError
from harness.core.trajectory_schema import (
    BLOB_NAME,
    Blob,
    ModelStep,
    Record,
    RoundBegin,
    Text,
    parse_record,
)
from harness.observe.events import read_lines

TRAJECTORY_FILE = "trajectory.jsonl"
"""The trajectory's name inside a run folder."""

BLOBS_DIR = "trajectory-blobs"
"""The side folder of long texts, beside the trajectory."""

Message = dict[str, Any]


def read_trajectory(path: str | os.PathLike[str]) -> list[Record]:
    """Every record of a trajectory, in order.

    A last line that does not parse is a write cut short by a kill and is skipped; any other
    line that does not parse raises :class:`ConfigError` naming the file and line.
    """
    try:
        data = nofollow.read_bytes(path, limit=1 << 34)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no trajectory (the run recorded none)") from None
    return read_lines(path, data, parse_record, "a valid trajectory record")


@dataclass
class Call:
    """A recorded model call with its whole request rebuilt."""

    step: ModelStep
    messages: list[Message]
    tools: list[dict[str, Any]] | None

    def body(self) -> dict[str, Any]:
        """The request's body as it went on the wire (as far as the model reported it), its
        fields in their order there."""
        body: dict[str, Any] = dict(self.step.request.wire or {})
        body["messages"] = self.messages
        if self.tools is not None:
            body["tools"] = self.tools
        return body


@dataclass
class Trajectory:
    """A recorded trajectory, read back: its records, and their long texts from the side folder."""

    path: Path
    records: list[Record]
    _texts: dict[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls, run_dir: str | os.PathLike[str]) -> Trajectory:
        path = Path(run_dir) / TRAJECTORY_FILE
        return cls(path, read_trajectory(path))

    def text(self, value: Text | dict[str, Any]) -> str:
        """The text itself, read from the side folder when it is a blob."""
        if isinstance(value, str):
            return value
        return self.blob(value.blob if isinstance(value, Blob) else str(value["blob"]))

    def blob(self, digest: str) -> str:
        """The text stored in the side folder under ``digest``."""
        if digest not in self._texts:
            if not re.fullmatch(BLOB_NAME, digest):
                raise ConfigError(f"{self.path}: blob {digest!r} is not a blob's name (a SHA-256)")
            blob = self.path.with_name(BLOBS_DIR) / digest
            try:
                data = nofollow.read_bytes(blob, root=self.path.parent, limit=1 << 32)
                self._texts[digest] = data.decode("utf-8")
            except FileNotFoundError:
                raise ConfigError(f"{blob}: missing from the trajectory's side folder") from None
        return self._texts[digest]

    def rounds(self) -> list[int]:
        return sorted({r.round for r in self.records if isinstance(r, RoundBegin)})

    def calls(self) -> Iterator[Call]:
        """Every model call, its request rebuilt as it was sent."""
        previous: dict[tuple[int | None, str], list[Message]] = {}
        for record in self.records:
            if not isinstance(record, ModelStep):
                continue
            key = (record.session, record.role)
            kept = previous.get(key, [])[: record.request.keep]
            messages = kept + [self._message(m) for m in record.request.messages]
            previous[key] = messages
            tools = record.request.tools
            yield Call(record, messages, json.loads(self.blob(tools)) if tools else None)

    def _message(self, message: Message) -> Message:
        content = message.get("content")
        if isinstance(content, dict) and "blob" in content:
            return {**message, "content": self.text(content)}
        return message
