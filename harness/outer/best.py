"""Which round was best: the order a loop that ends without a pass, or regresses, points by.

The order, best first:

1. a round that passed;
2. more gates passed (a round that changed a protected file counts as passing none);
3. a higher critic score (a round the critic did not score counts below any score);
4. on a tie, the earlier round: a later round must do better to replace it.

The same order reads a round's :class:`~harness.outer.decision.RoundReport` and its attempt in
progress.md, so ``harness status`` and a resumed run name the same round as the run did.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.memory.progress_terms import PROTECTED_CHANGED, critic_mark, gate_line

if TYPE_CHECKING:
    from harness.memory.progress_format import FieldsAt
    from harness.memory.progress_items import Attempt
    from harness.outer.decision import RoundReport


@dataclass(frozen=True)
class RoundMark:
    """What the order weighs of one round."""

    round: int
    passed: bool
    gates_passed: int
    gates: int
    score: float | None

    @classmethod
    def of_report(cls, report: RoundReport) -> RoundMark:
        score = report.verdict.score if report.verdict is not None else None
        gates = [g.passed for g in report.gates]
        return cls._of(report.round, report.outcome, gates, score, not report.protected_violations)

    @classmethod
    def of_attempt(cls, attempt: Attempt) -> RoundMark:
        gates = [g.passed for g in attempt.gates if not isinstance(g, str)]
        return cls._of(
            attempt.round,
            attempt.outcome,
            gates,
            attempt.critic_score,
            attempt.outcome != PROTECTED_CHANGED,
        )

    @classmethod
    def of_text(cls, attempt: FieldsAt) -> RoundMark:
        """The mark of an attempt as progress.md has it, unvalidated (``harness status``)."""
        fields = attempt.fields
        lines = fields.get("gates")
        gates = [g.passed for t in lines if (g := gate_line(t))] if isinstance(lines, list) else []
        score = fields.get("critic_score")
        round_number, outcome = fields["round"], fields["outcome"]
        assert isinstance(round_number, int)  # the reader makes them so
        assert isinstance(outcome, str)
        critic = critic_mark(score) if isinstance(score, float) else None  # as an Attempt keeps it
        return cls._of(round_number, outcome, gates, critic, outcome != PROTECTED_CHANGED)

    @classmethod
    def _of(
        cls, round: int, outcome: str, gates: list[bool], score: float | None, clean: bool
    ) -> RoundMark:
        """``clean``: the round changed no protected file (in a live run, its report says so;
        read back from progress.md, its outcome line does)."""
        return cls(
            round=round,
            passed=outcome == "passed",
            gates_passed=sum(gates) if clean else 0,
            gates=len(gates),
            score=score,
        )

    def describe(self) -> str:
        """``round 2 (2/3 gates passed, critic 7.0/10)``."""
        parts = ["passed"] if self.passed else []
        if self.gates:
            parts.append(f"{self.gates_passed}/{self.gates} gates passed")
        if self.score is not None:
            parts.append(f"critic {self.score:.1f}/10")
        return f"round {self.round}" + (f" ({', '.join(parts)})" if parts else "")


def _rank(mark: RoundMark) -> tuple[bool, int, float, int]:
    return (mark.passed, mark.gates_passed, -1.0 if mark.score is None else mark.score, -mark.round)


def best_round(marks: Iterable[RoundMark]) -> RoundMark | None:
    """The best of ``marks`` by the order above; None when there are none."""
    return max(marks, key=_rank, default=None)


def best_of(attempts: Iterable[Attempt], reports: Iterable[RoundReport]) -> RoundMark | None:
    """The best round of a run: earlier sessions' ``attempts`` and this session's ``reports``
    (a round in both is read from its report)."""
    played = {r.round: RoundMark.of_report(r) for r in reports}
    earlier = [RoundMark.of_attempt(a) for a in attempts if a.round not in played]
    return best_round([*earlier, *played.values()])
