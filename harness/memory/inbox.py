"""How a person reaches a running loop: files in the user's state folder, kept for its progress.md.

They lie in ``<state home>/inboxes/<24 hex of the progress file's path>/`` (see
:mod:`harness.core.state_home`), never beside progress.md: that folder is the agent's to write
under ``backend = "none"`` (or with ``isolation = "none"``, in its very workspace), and a note
or an answer found there would be taken as a person's.

* ``NAME.approval-request.json`` — written by the loop while it waits for a person to approve
  a round; removed when an answer is taken or the wait ends.
* ``NAME.approval.json`` — the answer, written by ``harness approve`` for the round it names.
* ``NAME.notes.jsonl`` — guidance queued by ``harness note``, one JSON object a line; the loop
  takes the whole queue at the start of a round.

Every write is atomic or a single appended line, so a loop and a person's command in another
process never see half a file. No link is followed to reach them, each must be a regular file,
and what is read is bounded (:mod:`harness.core.nofollow`).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from harness.core import nofollow
from harness.core.atomic import atomic_write_text
from harness.core.errors import ConfigError
from harness.core.state_home import state_folder

if TYPE_CHECKING:
    from pydantic import BaseModel

    from harness.memory.approval import ApprovalAnswer, ApprovalRequest, Decision

    _Model = TypeVar("_Model", bound=BaseModel)

INBOX_LIMIT = 4 * 1024 * 1024
"""The most an inbox file may hold when read (4 MB)."""


@dataclass(frozen=True)
class Inbox:
    """The files through which a person answers the loop whose progress file is ``progress``."""

    progress: Path

    def _file(self, suffix: str) -> Path:
        return state_folder("inboxes", self.progress) / f"{self.progress.stem}.{suffix}"

    @property
    def request_file(self) -> Path:
        return self._file("approval-request.json")

    @property
    def answer_file(self) -> Path:
        return self._file("approval.json")

    @property
    def notes_file(self) -> Path:
        return self._file("notes.jsonl")

    # --- the loop's side ---------------------------------------------------------------------

    def ask(self, request: ApprovalRequest) -> None:
        """Post ``request``; an answer left from an earlier wait is dropped."""
        nofollow.unlink(self.answer_file)
        atomic_write_text(self.request_file, request.model_dump_json(indent=2) + "\n")

    def answer_for(self, round_number: int) -> ApprovalAnswer | None:
        """The answer to round ``round_number``'s request, once a person gave it."""
        from harness.memory.approval import ApprovalAnswer

        answer = _read(self.answer_file, ApprovalAnswer)
        if answer is None or answer.round != round_number:
            return None
        return answer

    def close(self) -> None:
        """The wait is over: no request is pending and no answer is left."""
        nofollow.unlink(self.request_file)
        nofollow.unlink(self.answer_file)

    def take_notes(self) -> list[str]:
        """Every queued note, oldest first; the queue is emptied."""
        taking = self._file(f"notes.{os.getpid()}.taking")
        if not nofollow.rename(self.notes_file, taking.name):  # later notes start a new queue
            return []
        try:
            lines = nofollow.read_text(taking, limit=INBOX_LIMIT).splitlines()
        finally:
            nofollow.unlink(taking)
        notes = []
        for line in lines:
            try:
                text = json.loads(line).get("text", "")
            except (ValueError, AttributeError):
                continue  # a torn line from a crashed writer is dropped, not fatal
            if isinstance(text, str) and text.strip():
                notes.append(text.strip())
        return notes

    # --- the person's side -------------------------------------------------------------------

    def pending(self) -> ApprovalRequest | None:
        """The request waiting for an answer. Without one, pydantic is not even imported:
        ``harness status`` asks this of every loop."""
        if not os.path.lexists(self.request_file):
            return None
        from harness.memory.approval import ApprovalRequest

        return _read(self.request_file, ApprovalRequest)

    def answer(self, decision: Decision, note: str = "") -> ApprovalRequest:
        """Answer the pending request; a :class:`ConfigError` when the loop is not waiting."""
        request = self.pending()
        if request is None:
            raise ConfigError(
                f"{self.progress.stem}: the loop is not waiting for approval "
                f"(no {self.request_file.name})"
            )
        from harness.memory.approval import ApprovalAnswer

        answer = ApprovalAnswer(round=request.round, decision=decision, note=note.strip())
        atomic_write_text(self.answer_file, answer.model_dump_json() + "\n")
        return request

    def add_note(self, text: str) -> None:
        if not text.strip():
            raise ConfigError("note: the text is empty")
        line = json.dumps({"text": text.strip(), "at": time.time()}) + "\n"
        nofollow.append(self.notes_file, line.encode("utf-8"))  # one write: never interleaved


def _read(path: Path, kind: type[_Model]) -> _Model | None:
    from pydantic import ValidationError

    try:
        return kind.model_validate_json(nofollow.read_bytes(path, limit=INBOX_LIMIT))
    except (FileNotFoundError, ValidationError):
        return None
