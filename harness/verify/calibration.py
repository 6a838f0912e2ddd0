"""Calibration: how well a critic (or a panel) agrees with a person on labelled artifacts.

The examples come from a folder a person labelled, and from the approvals a human gate recorded
in runs' event logs. Each is judged afresh by the critic setup; the report gives the agreement,
the false-accept rate (of what the person rejected, the share the critic passed), the
false-reject rate (of what the person accepted, the share the critic failed), and the score
threshold that would best match the person, with the number of examples behind each figure.

The folder holds the artifacts and ``labels.jsonl``, one :class:`Label` a line::

    {"file": "drafts/a.md", "label": "accept"}
    {"file": "drafts/b.md", "label": "reject", "note": "two claims without a source"}
    {"file": "c.diff", "label": "accept", "goal": "Fix the off-by-one in pager.py"}

``file`` is relative to the folder (no ``..``, not absolute); ``goal`` defaults to the loop's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness.core.errors import ConfigError
from harness.core.event_schema import ApprovalEvent, CriticVerdict, RunStart
from harness.core.usage import Usage
from harness.core.validation import json_lines, read_utf8, validation_message
from harness.observe.events import EVENTS_FILE, read_events
from harness.verify.critic import Verdict
from harness.verify.critic_prompt import reviewed_artifact
from harness.verify.panel import PanelVerdict

LABELS_FILE = "labels.jsonl"
ARTIFACT_LIMIT = 1_000_000
"""The most characters an example's artifact may hold."""


class Label(BaseModel):
    """One line of ``labels.jsonl``: an artifact and the person's word on it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    file: str = Field(min_length=1)
    label: Literal["accept", "reject"]
    goal: str | None = Field(None, min_length=1)
    note: str = ""

    @field_validator("file")
    @classmethod
    def _inside(cls, value: str) -> str:
        path = PurePosixPath(value)
        if path.is_absolute() or ".." in path.parts:
            raise ValueError("must be a path inside the examples folder (no '..', not absolute)")
        return value


@dataclass(frozen=True)
class Example:
    """An artifact to judge, the goal it was made for, and whether the person accepted it."""

    name: str
    goal: str
    artifact: str
    accepted: bool


class Judged(BaseModel):
    """One example as the person and the critic saw it."""

    model_config = ConfigDict(frozen=True)

    name: str
    accepted: bool  # by the person
    score: float
    passed: bool  # by the critic setup
    split: bool = False  # a panel's critics disagreed


class Rates(BaseModel):
    """Agreement at one threshold; a rate is None when no example could show it."""

    model_config = ConfigDict(frozen=True)

    threshold: float
    agreement: float
    false_accept_rate: float | None
    false_reject_rate: float | None


class Comparison(BaseModel):
    """The same examples judged by a second critic: the author's model in the same setup."""

    model_config = ConfigDict(frozen=True)

    critic: str
    verdicts: Rates
    mean_score_difference: float  # its mean score less the first critic's
    verdicts_differ: int  # examples one passed and the other failed
    usage: Usage
    judged: list[Judged]


def _rate(value: float | None, of: int) -> str:
    return "n/a (none to measure)" if value is None else f"{value:.0%} of {of}"


class CalibrationReport(BaseModel):
    """What calibration found; ``examples``, ``accepted`` and ``rejected`` say what it rests on.

    ``verdicts`` are the setup's own pass/fail (its threshold, must-pass criteria, panel
    aggregation); ``best`` applies a threshold to the score alone, the one that best matches
    the person (ties: fewer false accepts, then nearer the configured threshold).
    """

    model_config = ConfigDict(frozen=True)

    critic: str
    examples: int
    accepted: int
    rejected: int
    verdicts: Rates
    best: Rates
    splits: int
    usage: Usage
    judged: list[Judged]
    compared: Comparison | None = None  # the author's model in the same setup, when judged

    def table(self) -> str:
        """The report as a person reads it."""
        lines = [
            f"critic: {self.critic}",
            f"examples: {self.examples} ({self.accepted} accepted, {self.rejected} rejected "
            "by a person)",
        ]
        for title, rates in (("as configured", self.verdicts), ("best threshold", self.best)):
            lines += [
                f"{title}: threshold {rates.threshold:g}",
                f"  agreement: {rates.agreement:.0%} of {self.examples}",
                f"  false accepts: {_rate(rates.false_accept_rate, self.rejected)}",
                f"  false rejects: {_rate(rates.false_reject_rate, self.accepted)}",
            ]
        if (other := self.compared) is not None:
            lines += [
                f"the author's model as critic ({other.critic}), on the same examples:",
                f"  mean score: {other.mean_score_difference:+.1f} against {self.critic}",
                f"  agreement: {other.verdicts.agreement:.0%} of {self.examples}",
                f"  false accepts: {_rate(other.verdicts.false_accept_rate, self.rejected)}",
                f"  false rejects: {_rate(other.verdicts.false_reject_rate, self.accepted)}",
                f"  verdicts differ on {other.verdicts_differ} of {self.examples}",
            ]
        if self.splits:
            lines.append(f"critics split on {self.splits} of {self.examples}")
        if self.examples < 20:
            lines.append(f"few examples ({self.examples}): label more before trusting these")
        return "\n".join(lines)


def read_examples(folder: Path, goal: str) -> list[Example]:
    """The labelled examples of ``folder`` (see the module doc); errors name file and line."""
    labels = folder / LABELS_FILE
    examples = []
    for where, data in json_lines(labels, read_utf8(labels, "labels")):
        try:
            label = Label.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(f"{where}: {validation_message(exc)}") from None
        path = folder / label.file
        if path.is_symlink() or not path.is_file():
            raise ConfigError(f"{where}: file: {path} is not a regular file")
        artifact = read_utf8(path, "an artifact")
        if len(artifact) > ARTIFACT_LIMIT:
            raise ConfigError(f"{where}: file: longer than {ARTIFACT_LIMIT} characters")
        examples.append(Example(label.file, label.goal or goal, artifact, label.label == "accept"))
    if not examples:
        raise ConfigError(f"{labels}: no labelled examples")
    return examples


def recorded_approvals(folder: Path) -> list[Example]:
    """The rounds a person approved or rejected in the runs under ``folder`` (a run folder, or
    one holding run folders), each with the artifact its critic judged, as recorded."""
    logs = [folder / EVENTS_FILE] if (folder / EVENTS_FILE).is_file() else []
    logs += sorted(folder.glob(f"*/{EVENTS_FILE}"))
    if not logs:
        raise ConfigError(f"{folder}: no run folder (none holds {EVENTS_FILE})")
    examples = []
    for log in logs:
        events = read_events(log)
        goals = [e.goal for e in events if isinstance(e, RunStart)]
        shown = {e.round: _artifact(e) for e in events if isinstance(e, CriticVerdict)}
        for event in events:
            if not isinstance(event, ApprovalEvent) or event.outcome == "timed_out":
                continue
            artifact = shown.get(event.round)
            if artifact is not None and goals:
                name = f"{log.parent.name} round {event.round}"
                examples.append(Example(name, goals[0], artifact, event.outcome == "approved"))
    return examples


def _artifact(event: CriticVerdict) -> str | None:
    """The artifact inside the request the critic was sent, as it stood before fencing."""
    for message in event.messages:
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, str):
            artifact = reviewed_artifact(content)
            if artifact is not None:
                return artifact
    return None


Review = Callable[[str, str], Verdict]
"""Judge ``(goal, artifact)``: a critic's or a panel's ``review``."""


def calibrate(
    review: Review,
    examples: Sequence[Example],
    *,
    threshold: float,
    critic: str = "critic",
    on_example: Callable[[int, Judged], object] | None = None,
) -> CalibrationReport:
    """Judge every example with ``review`` and measure the agreement with the person."""
    if not examples:
        raise ConfigError("examples: nothing to calibrate on")
    judged, usage = [], Usage()
    for index, example in enumerate(examples, start=1):
        verdict = review(example.goal, example.artifact)
        usage += verdict.usage
        item = Judged(
            name=example.name,
            accepted=example.accepted,
            score=verdict.score,
            passed=verdict.passed,
            split=isinstance(verdict, PanelVerdict) and verdict.split,
        )
        judged.append(item)
        if on_example is not None:
            on_example(index, item)
    accepted = sum(item.accepted for item in judged)
    return CalibrationReport(
        critic=critic,
        examples=len(judged),
        accepted=accepted,
        rejected=len(judged) - accepted,
        verdicts=rates(judged, threshold, [item.passed for item in judged]),
        best=best_threshold(judged, threshold),
        splits=sum(item.split for item in judged),
        usage=usage,
        judged=judged,
    )


def compared(report: CalibrationReport, second: CalibrationReport) -> CalibrationReport:
    """``report`` with ``second`` (the same examples judged by another critic) compared in."""
    if [item.name for item in second.judged] != [item.name for item in report.judged]:
        raise ValueError("the two critics judged different examples")
    mean = sum(item.score for item in report.judged) / len(report.judged)
    other = sum(item.score for item in second.judged) / len(second.judged)
    comparison = Comparison(
        critic=second.critic,
        verdicts=second.verdicts,
        mean_score_difference=round(other - mean, 2),
        verdicts_differ=sum(
            a.passed != b.passed for a, b in zip(report.judged, second.judged, strict=True)
        ),
        usage=second.usage,
        judged=second.judged,
    )
    return report.model_copy(update={"compared": comparison})


def rates(judged: Sequence[Judged], threshold: float, passed: Sequence[bool]) -> Rates:
    """Agreement and error rates of ``passed`` (one per example) against the person."""
    accepted = [p for item, p in zip(judged, passed, strict=True) if item.accepted]
    rejected = [p for item, p in zip(judged, passed, strict=True) if not item.accepted]
    agree = sum(p == item.accepted for item, p in zip(judged, passed, strict=True))
    return Rates(
        threshold=threshold,
        agreement=round(agree / len(judged), 4),
        false_accept_rate=round(sum(rejected) / len(rejected), 4) if rejected else None,
        false_reject_rate=round(accepted.count(False) / len(accepted), 4) if accepted else None,
    )


def best_threshold(judged: Sequence[Judged], configured: float) -> Rates:
    """The threshold on the score that agrees with the person most often.

    The candidates are 0, every score seen, and one just above the highest (a threshold that
    fails them all) while that is at most 10; ties go to fewer false accepts, then to the
    candidate nearest ``configured``.
    """
    scores = {item.score for item in judged}
    above = round(max(scores) + 0.01, 2)  # above the highest score: rounding errs by 0.005 at most
    candidates = sorted({0.0, *scores, *([above] if above <= 10 else [])})
    found = [rates(judged, t, [item.score >= t for item in judged]) for t in candidates]
    return max(
        found,
        key=lambda r: (
            r.agreement,
            -(r.false_accept_rate or 0.0),
            -abs(r.threshold - configured),
        ),
    )
