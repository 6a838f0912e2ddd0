"""What a loop has spent, kept beside its progress.md so the budget covers every re-run.

``progress/<name>.spend.json`` holds the tokens, cost and seconds of every process that worked on
the loop; a re-run starts from it, and ``--restart`` sets it aside with progress.md.

What survives a crash:

- **The process killed or cut off at any moment** (a budget stop, a kill, an exception): every
  model call is counted. The record is replaced atomically (temporary file, then rename) after
  each call, so the file holds the calls up to the last one, never a torn record.
- **The machine crashing or losing power**: what was recorded by the end of the last completed
  round (and by the end of the run) is counted. Those writes are durable (file and folder
  fsynced); the per-call writes skip the fsyncs, which would cost two disk flushes per model
  call, so the calls of the round in progress may be lost with the operating system's cache.
  On a file system that does not order a rename after its data, such a crash may leave the
  file unreadable: the next run then stops naming it (:func:`read_spent`), never restarting
  the budget from zero.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.core import nofollow
from harness.core.atomic import atomic_write_text
from harness.core.errors import ConfigError
from harness.core.usage import Usage

SPEND_LIMIT = 64 * 1024
"""The most a spend record may hold: it is a few numbers."""


class Spent(BaseModel):
    """A loop's spend so far."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    cost_usd: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    calls: int = Field(default=0, ge=0)
    unpriced_calls: int = Field(default=0, ge=0)
    seconds: float = Field(default=0.0, ge=0, allow_inf_nan=False)

    @property
    def usage(self) -> Usage:
        return Usage(**self.model_dump(exclude={"seconds"}))

    @classmethod
    def of(cls, usage: Usage, seconds: float) -> Spent:
        kept = {name: getattr(usage, name) for name in cls.model_fields if name != "seconds"}
        return cls(**kept, seconds=seconds)


def spend_path(progress_path: Path) -> Path:
    """Where the spend of the loop whose progress is ``progress_path`` is kept."""
    return progress_path.with_suffix(".spend.json")


def read_spent(path: Path) -> Spent:
    """The spend recorded at ``path``; nothing spent when there is no file.

    A file that cannot be read is a :class:`ConfigError` naming it: the budget must not
    silently start again from zero. It is read without following a link and bounded in size.
    """
    try:
        text = nofollow.read_bytes(path, limit=SPEND_LIMIT)
    except FileNotFoundError:
        return Spent()
    try:
        return Spent.model_validate_json(text)
    except ValidationError as exc:
        raise ConfigError(
            f"{path}: not a spend record ({exc.errors()[0]['msg']}); it keeps what this loop "
            "has spent against its budget. Restore it, or start over with --restart"
        ) from exc


def write_spent(path: Path, spent: Spent, *, durable: bool = True) -> None:
    """Save ``spent`` at ``path`` atomically; ``durable=False`` for the write after each model
    call (atomic for every process, not proof against a power cut: see the module's notes)."""
    atomic_write_text(path, spent.model_dump_json(indent=2) + "\n", durable=durable)
