"""``summary.json``: every task of a batch, how it ended, and the totals."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from harness.core import nofollow
from harness.core.atomic import atomic_write_text
from harness.core.errors import ConfigError
from harness.core.validation import format_validation_error
from harness.scale.batch_task import TaskRecord
from harness.scale.side_by_side import RunnerFigures, compare

SUMMARY_FILE = "summary.json"


SUMMARY_LIMIT = 64 * 1024 * 1024
"""The most a batch summary may hold when read (64 MB)."""


class Totals(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0
    """The tasks' own times added up (more than the wall time when they ran in parallel)."""


class BatchSummary(BaseModel):
    """What ``harness report`` renders for a batch."""

    model_config = ConfigDict(extra="forbid")

    tasks: list[TaskRecord]
    not_started: list[str] = []
    """Tasks not started: the batch-wide budget was spent or the batch was interrupted (a re-run
    starts them)."""
    totals: Totals
    counts: dict[str, int]
    pass_rate: float
    wall_seconds: float
    workers: int
    backend: str
    kind: Literal["batch", "attempts"] = "batch"
    winner: str | None = None
    """Best-of-N: the attempt kept."""
    unsandboxed: list[str] = []
    """Each reason the tasks' commands ran without a sandbox, once (empty when none did)."""
    runners: list[RunnerFigures] = []
    """Each runner's figures (:mod:`harness.scale.side_by_side`), in the order first seen."""

    @classmethod
    def of(
        cls,
        records: Sequence[TaskRecord],
        *,
        not_started: Sequence[str],
        wall_seconds: float,
        workers: int,
        backend: str,
        kind: Literal["batch", "attempts"] = "batch",
        winner: str | None = None,
    ) -> BatchSummary:
        counts: dict[str, int] = dict(Counter(record.status for record in records))
        if not_started:
            counts["not_started"] = len(not_started)
        total = len(records) + len(not_started)
        prompt = sum(r.prompt_tokens for r in records)
        completion = sum(r.completion_tokens for r in records)
        totals = Totals(
            prompt_tokens=prompt,
            completion_tokens=completion,
            tokens=prompt + completion,
            cost_usd=sum(r.cost_usd for r in records),
            seconds=sum(r.seconds for r in records),
        )
        return cls(
            tasks=list(records),
            not_started=list(not_started),
            totals=totals,
            counts=counts,
            pass_rate=counts.get("passed", 0) / total if total else 0.0,
            wall_seconds=wall_seconds,
            workers=workers,
            backend=backend,
            kind=kind,
            winner=winner,
            unsandboxed=sorted({r.unsandboxed for r in records if r.unsandboxed}),
            runners=compare(records),
        )

    def save(self, out: Path) -> Path:
        return atomic_write_text(out / SUMMARY_FILE, self.model_dump_json(indent=2))

    @classmethod
    def load(cls, path: Path) -> BatchSummary:
        file = path / SUMMARY_FILE if path.is_dir() else path
        try:
            return cls.model_validate_json(nofollow.read_bytes(file, limit=SUMMARY_LIMIT))
        except OSError as exc:
            raise ConfigError(f"{file}: cannot read the batch summary: {exc.strerror}") from exc
        except ValidationError as exc:
            raise ConfigError(format_validation_error(file, exc)) from None
