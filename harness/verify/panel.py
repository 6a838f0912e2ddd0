"""A critic panel: several independent critics judge the same artifact; one verdict comes out.

Each critic (its own model, and a role such as editor, fact-checker or audience with its own
instructions) reviews the artifact in a fresh context, as a lone :class:`Critic` does. Their
verdicts are combined by ``aggregate``:

* ``median`` — the median score; it passes at the threshold, and every must-pass criterion's
  median score must reach the threshold too;
* ``minimum`` — the lowest score; it passes only if every critic passed;
* ``majority`` — more than half of the critics passed; the score shown is the median.

When the critics' scores lie ``spread`` points or more apart, the panel is *split*: the verdict
says so (its reasons and the ``critic_verdict`` event), and a panel given a ``referee`` (a
:class:`HumanGate`) has a person approve any round it passed while split.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass
from typing import TypeAlias

from harness.core.errors import ConfigError
from harness.core.event_schema import CriticVerdict, EventBase, PanelMember
from harness.core.section import check_field
from harness.core.sink import NULL_SINK, EventSink
from harness.core.usage import Usage
from harness.models.base import Message, Model
from harness.verify.critic import CriterionScore, Critic, Verdict, verdict_event
from harness.verify.critic_config import AGGREGATES, CRITIC_DEFAULTS, Aggregate, CriticConfig
from harness.verify.human import HumanGate


class PanelVerdict(Verdict):
    """A panel's combined verdict, with each critic's own (``members``).

    ``spread`` is the highest score minus the lowest; ``split`` is ``spread`` reaching the
    panel's limit.
    """

    members: tuple[Verdict, ...]
    aggregate: Aggregate
    spread: float
    split: bool


class _Collect:
    """Keeps the one event a critic emits for a review (the panel reports them together)."""

    def __init__(self) -> None:
        self.events: list[EventBase] = []

    def emit(self, event: EventBase) -> None:
        self.events.append(event)


@dataclass(eq=False)
class CriticPanel:
    """Several critics judging each artifact, combined by ``aggregate``; see the module doc.

    It stands wherever a :class:`Critic` does (``OuterLoop(critic=...)``): ``review``,
    ``fail``, ``threshold``, ``criteria_given``. The critics share one threshold.
    """

    critics: Sequence[Critic]
    _: KW_ONLY
    aggregate: Aggregate = CRITIC_DEFAULTS.aggregate
    spread: float = CRITIC_DEFAULTS.spread
    referee: HumanGate | None = None
    events: EventSink = NULL_SINK

    def __post_init__(self) -> None:
        critics = self.critics = tuple(self.critics)
        if not critics:
            raise ConfigError("critics: a panel needs at least one critic")
        if self.aggregate not in AGGREGATES:
            raise ConfigError(
                f"aggregate: expected one of {', '.join(AGGREGATES)}, got {self.aggregate!r}"
            )
        check_field(CriticConfig, "spread", self.spread)
        thresholds = {critic.threshold for critic in critics}
        if len(thresholds) > 1:
            raise ConfigError(
                f"threshold: the panel's critics must share one, got {sorted(thresholds)}"
            )
        self._seats = [(c.for_run(c.model, sink), sink) for c in critics for sink in [_Collect()]]
        self.threshold = critics[0].threshold

    @property
    def criteria_given(self) -> bool:
        """Every critic has criteria of its own (else a loop's SKILL.md supplies them)."""
        return all(critic.criteria_given for critic in self.critics)

    @property
    def models(self) -> tuple[Model, ...]:
        return tuple(critic.model for critic in self.critics)

    @property
    def model(self) -> Model:
        """The first critic's model (where one model is shown for the critic)."""
        return self.critics[0].model

    @property
    def label(self) -> str:
        return "panel of " + ", ".join(critic.label for critic in self.critics)

    def with_models(self, models: Sequence[Model], events: EventSink) -> CriticPanel:
        """A copy whose critics ask ``models`` (in order) and that reports to ``events``."""
        if len(models) != len(self.critics):
            raise ValueError(f"expected {len(self.critics)} models, got {len(models)}")
        critics = [c.for_run(m, c.events) for c, m in zip(self.critics, models, strict=True)]
        return dataclasses.replace(self, critics=critics, events=events)

    def review(
        self,
        goal: str,
        artifact: str,
        *,
        criteria: str | Sequence[str] | None = None,
        notes: Sequence[str] = (),
        round: int | None = None,
    ) -> PanelVerdict:
        """Every critic's verdict on ``artifact``, combined; one ``critic_verdict`` event."""
        verdicts = []
        for critic, collected in self._seats:
            collected.events.clear()
            verdict = critic.review(goal, artifact, criteria=criteria, notes=notes, round=round)
            verdicts.append(verdict.model_copy(update={"critic": critic.label}))
        # The first critic's request (from its verdict event) holds the artifact all judged.
        events = self._seats[0][1].events
        sent = next((list(e.messages) for e in events if isinstance(e, CriticVerdict)), [])
        return self._emit(self.combine(verdicts), round, sent)

    def fail(self, reason: str, fix: str, *, round: int | None = None) -> PanelVerdict:
        """A failing verdict given without asking the critics (nothing fit to judge)."""
        verdicts = [
            critic.fail(reason, fix).model_copy(update={"critic": critic.label})
            for critic, _ in self._seats
        ]
        return self._emit(self.combine(verdicts), round, [])

    def combine(self, verdicts: Sequence[Verdict]) -> PanelVerdict:
        """The panel's verdict from its critics' (one per critic, in order)."""
        scores = [v.score for v in verdicts]
        median = float(statistics.median(scores))
        criteria = _median_criteria(verdicts)
        if self.aggregate == "minimum":
            score, passed = min(scores), all(v.passed for v in verdicts)
        elif self.aggregate == "majority":
            score, passed = median, sum(v.passed for v in verdicts) * 2 > len(verdicts)
        else:
            short = [c.text for c in criteria if c.must_pass and c.score < self.threshold]
            score, passed = median, median >= self.threshold and not short
        spread = max(scores) - min(scores)
        split = len(verdicts) > 1 and spread >= self.spread
        reasons = [f"{v.critic} ({v.score:g}/10): {r}" for v in verdicts for r in v.reasons]
        if split:
            reasons.append(split_reason(verdicts, spread))
        return PanelVerdict(
            score=round(score, 2),
            passed=passed,
            reasons=reasons,
            fixes=list(dict.fromkeys(f for v in verdicts for f in v.fixes)),
            threshold=self.threshold,
            usage=sum((v.usage for v in verdicts), Usage()),
            criteria=criteria,
            critic="panel",
            members=tuple(verdicts),
            aggregate=self.aggregate,
            spread=round(spread, 2),
            split=split,
        )

    def _emit(
        self, verdict: PanelVerdict, round: int | None, messages: list[Message]
    ) -> PanelVerdict:
        members = [
            PanelMember(critic=v.critic, score=v.score, passed=v.passed) for v in verdict.members
        ]
        combined = verdict.model_dump(include={"aggregate", "spread", "split"})
        self.events.emit(verdict_event(verdict, round, messages, members=members, **combined))
        return verdict


def split_reason(verdicts: Sequence[Verdict], spread: float) -> str:
    """The line that says the critics disagree, and how far."""
    shown = ", ".join(f"{v.critic} {v.score:g}" for v in verdicts)
    return f"the critics disagree: scores {shown} lie {spread:g} points apart"


def _median_criteria(verdicts: Sequence[Verdict]) -> tuple[CriterionScore, ...]:
    """Each criterion the critics scored, with the median of their scores (first seen order)."""
    found: dict[str, list[CriterionScore]] = {}
    for verdict in verdicts:
        for criterion in verdict.criteria:
            found.setdefault(criterion.text, []).append(criterion)
    return tuple(
        scored[0].model_copy(
            update={
                "score": float(statistics.median(c.score for c in scored)),
                "reasons": [r for c in scored for r in c.reasons],
            }
        )
        for scored in found.values()
    )


Reviewer: TypeAlias = Critic | CriticPanel
"""What judges a round after its gates: one critic, or a panel of them."""
