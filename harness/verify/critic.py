"""The independent critic: a fresh model context that scores an artifact against criteria.

The critic never sees the author's transcript: :meth:`Critic.review` takes only the goal, the
artifact and the criteria, and every review starts from ``[system, user]``. The artifact is
untrusted data, fenced by delimiters with a fresh random id, so text inside it cannot close the
block or pass itself off as instructions. The verdict comes back in a form the artifact cannot
imitate (:mod:`harness.verify.verdict_reply`): a ``verdict`` tool call, or a block fenced by a tag
new for each request.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from harness.core.errors import ConfigError, HarnessError
from harness.core.event_schema import CriticVerdict, SessionEnd, SessionStart
from harness.core.section import check_field, check_value
from harness.core.sink import NULL_SINK, EventSink
from harness.core.usage import Usage
from harness.memory.skill import Criterion
from harness.models.base import Message, Model, ModelError, Reply, ReplyTokens
from harness.models.budget import metered
from harness.models.provider_errors import ErrorKind
from harness.models.resolve import resolve_model
from harness.verify.critic_config import THRESHOLD, CriticConfig
from harness.verify.critic_prompt import (
    ANSWER_TEMPLATE,
    CRITIC_ROLE,
    CRITIC_RULES,
    DEFAULT_CRITERIA,
    RUBRIC_ANSWER_TEMPLATE,
    RUBRIC_TEMPLATE,
    numbered,
    render_criteria,
    render_review,
    repair_messages,
)
from harness.verify.verdict_reply import (
    RUBRIC_TOOL,
    VERDICT_TOOL,
    CriticReply,
    RubricReply,
    fence,
    fresh_tag,
    parse_verdict,
)


class CriticError(HarnessError):
    """The critic's model did not produce a usable verdict, even after one repair request."""

    def __init__(self, message: str, *, usage: Usage) -> None:
        super().__init__(message)
        self.usage = usage  # what the failed review cost, for the run's budget


class CriterionScore(BaseModel):
    """How a critic scored one criterion of the rubric."""

    model_config = ConfigDict(frozen=True)

    text: str
    must_pass: bool = False
    weight: float = 1.0
    score: float
    reasons: list[str] = Field(default_factory=list)


class Verdict(BaseModel):
    """A critic's judgement: ``passed`` is ``score >= threshold``.

    A critic given a rubric scores each criterion (``criteria``); its ``score`` is their
    weighted mean, and it passes only if every must-pass criterion reaches the threshold too.
    ``critic`` names the critic (its role, else its model) when it sits on a panel.
    """

    model_config = ConfigDict(frozen=True)

    score: float
    passed: bool
    reasons: list[str]
    fixes: list[str]
    threshold: float
    usage: Usage = Field(default_factory=Usage)
    raw: str = ""
    criteria: tuple[CriterionScore, ...] = ()
    critic: str = ""


class Critic:
    """Scores artifacts with its own model, system prompt and criteria, in a fresh context.

    ``rubric``: criteria scored one by one (must-pass, weights; see :class:`Criterion`).
    ``role`` (an editor, a fact-checker, the audience) and ``instructions`` are added to the
    system prompt; a panel (:class:`~harness.verify.panel.CriticPanel`) names its critics by them.
    """

    def __init__(
        self,
        model: Model | str,
        *,
        criteria: str | Sequence[str] | None = None,
        threshold: float = THRESHOLD,
        system_prompt: str | None = None,
        max_tokens: int = 2000,
        events: EventSink = NULL_SINK,
        rubric: Sequence[Criterion] = (),
        role: str | None = None,
        instructions: str | None = None,
    ) -> None:
        check_value(ReplyTokens, max_tokens, "max_tokens")
        for field, text in (("system_prompt", system_prompt), ("role", role)):
            if text is not None and not text.strip():
                raise ConfigError(f"{field}: empty")
        self.model = resolve_model(model)
        self.criteria = render_criteria(DEFAULT_CRITERIA if criteria is None else criteria)
        self.criteria_given = criteria is not None  # else a loop's SKILL.md may supply them
        check_field(CriticConfig, "threshold", threshold)
        self.threshold = threshold
        self.rubric = tuple(rubric)
        self.role = role.strip() if role else None
        parts = [system_prompt or CRITIC_ROLE]
        if self.role:
            parts.append(f"On this review panel you are the {self.role}.")
        if instructions and instructions.strip():
            parts.append(instructions.strip())
        self.system_prompt = "\n\n".join([*parts, CRITIC_RULES])
        self.max_tokens = max_tokens
        self.events = events
        self.offer_tool = True  # False once the provider refused a request with tools

    def review(
        self,
        goal: str,
        artifact: str,
        *,
        criteria: str | Sequence[str] | None = None,
        notes: Sequence[str] = (),
        round: int | None = None,
    ) -> Verdict:
        """Judge ``artifact`` against ``goal`` and the criteria (these, or the critic's own),
        with ``notes`` (what passing gates want weighed) after them.

        The verdict goes to ``events`` as ``critic_verdict`` with ``round`` and the messages
        the critic's model was sent.
        """
        if not goal.strip():
            raise ConfigError("goal: empty")
        if not artifact.strip():
            return self.fail(
                "empty artifact", "Produce the artifact the goal asks for.", round=round
            )
        rendered = self.criteria if criteria is None else render_criteria(criteria)
        rendered = "\n\n".join([rendered, *notes])
        if self.rubric:
            rendered = RUBRIC_TEMPLATE.format(
                criteria=rendered, threshold=self.threshold, items=numbered(self.rubric)
            )
        tag = fresh_tag(goal, rendered, artifact, self.system_prompt)
        request = render_review(goal, artifact, rendered, self._answer(tag))
        messages: list[Message] = [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": request},
        ]
        model = metered(self.model)
        model.events.emit(SessionStart(role="critic", model=model.name))  # where its calls go
        try:
            answer = self._ask(messages)
            usage = answer.usage
            try:
                verdict = self._verdict(answer, tag)
            except ValueError as first:
                tag = fresh_tag(*(str(m["content"]) for m in messages), _shown(answer))
                messages = [*messages, *repair_messages(answer, str(first), self._answer(tag))]
                answer = self._ask(messages)
                usage += answer.usage
                try:
                    verdict = self._verdict(answer, tag)
                except ValueError as second:
                    raise CriticError(
                        f"critic {self.model.name}: invalid verdict after one repair request: "
                        f"{second} (reply: {_shown(answer)[:200]!r})",
                        usage=usage,
                    ) from second
        finally:
            model.events.emit(SessionEnd())
        return self._emit(verdict.model_copy(update={"usage": usage}), round, messages)

    @property
    def label(self) -> str:
        """The critic's name on a panel: its role, else its model's name."""
        return self.role or self.model.name

    def _answer(self, tag: str) -> str:
        template = RUBRIC_ANSWER_TEMPLATE if self.rubric else ANSWER_TEMPLATE
        opening, closing = fence(tag)
        return template.format(opening=opening, closing=closing)

    def _verdict(self, answer: Reply, tag: str) -> Verdict:
        """The verdict in ``answer`` (ValueError when it holds none fit to use)."""
        if not self.rubric:
            reply, raw = parse_verdict(answer, tag, CriticReply)  # its score, reasons and fixes
            passed = reply.score >= self.threshold
            return Verdict(**reply.model_dump(), passed=passed, threshold=self.threshold, raw=raw)
        scored, raw = parse_verdict(answer, tag, RubricReply)
        criteria = _scored(self.rubric, scored)
        total = sum(c.weight for c in criteria)
        score = round(sum(c.score * c.weight for c in criteria) / total, 2)
        short = [c for c in criteria if c.must_pass and c.score < self.threshold]
        reasons = [f"{c.text}: {reason}" for c in criteria for reason in c.reasons]
        reasons += [f"must-pass criterion below {self.threshold:g}: {c.text}" for c in short]
        return Verdict(
            score=score,
            passed=score >= self.threshold and not short,
            reasons=reasons,
            fixes=scored.fixes,
            threshold=self.threshold,
            raw=raw,
            criteria=criteria,
        )

    @property
    def models(self) -> tuple[Model, ...]:
        """The models this critic asks (one; a panel has one per critic)."""
        return (self.model,)

    def with_models(self, models: Sequence[Model], events: EventSink) -> Critic:
        """:meth:`for_run` with ``models`` as :attr:`models` gives them."""
        (model,) = models
        return self.for_run(model, events)

    def for_run(self, model: Model, events: EventSink) -> Critic:
        """A copy of this critic that asks ``model`` and reports to ``events`` (one run's)."""
        twin = copy.copy(self)
        twin.model, twin.events = model, events
        return twin

    def fail(self, reason: str, fix: str, *, round: int | None = None) -> Verdict:
        """A failing verdict given without asking the model (nothing fit to judge)."""
        verdict = Verdict(
            score=0.0,
            passed=False,
            reasons=[reason],
            fixes=[fix],
            threshold=self.threshold,
        )
        return self._emit(verdict, round)

    def _ask(self, messages: list[Message]) -> Reply:
        """The model's reply, offered the verdict tool unless its provider refused tools before.

        A provider that answers a request with tools as a bad request (a model without tool
        calling) is asked again without them, and not offered them again: the verdict tags the
        user message gives are then the only form of the verdict.
        """
        model = metered(self.model)  # every request leaves redacted
        if self.offer_tool:
            tool = RUBRIC_TOOL if self.rubric else VERDICT_TOOL
            try:
                return model.complete(messages, [tool], max_tokens=self.max_tokens)
            except ModelError as exc:
                if exc.kind is not ErrorKind.BAD_REQUEST:
                    raise
                self.offer_tool = False
        return model.complete(messages, max_tokens=self.max_tokens)

    def _emit(
        self, verdict: Verdict, round: int | None, messages: list[Message] | None = None
    ) -> Verdict:
        self.events.emit(verdict_event(verdict, round, messages or []))
        return verdict


def verdict_event(
    verdict: Verdict, round: int | None, messages: list[Message], **panel: Any
) -> CriticVerdict:
    """The ``critic_verdict`` event of ``verdict``, given on the request ``messages``; ``panel``
    holds a panel's own fields (its members, how they were combined, whether they split)."""
    said = verdict.model_dump(include={"score", "passed", "reasons", "fixes", "threshold"})
    return CriticVerdict(round=round, messages=messages, **said, **panel)


def _scored(rubric: Sequence[Criterion], reply: RubricReply) -> tuple[CriterionScore, ...]:
    """Each criterion with its score; ValueError unless every one is scored exactly once."""
    given = [entry.criterion for entry in reply.criteria]
    expected = list(range(1, len(rubric) + 1))
    if sorted(given) != expected:
        raise ValueError(
            f"score each of the criteria 1 to {len(rubric)} exactly once (got {given or 'none'})"
        )
    by_number = {entry.criterion: entry for entry in reply.criteria}
    return tuple(
        CriterionScore(
            **criterion.model_dump(), **by_number[number].model_dump(include={"score", "reasons"})
        )
        for number, criterion in enumerate(rubric, start=1)
    )


def _shown(answer: Reply) -> str:
    """The reply as text: its content, then each tool call as ``name(arguments)``."""
    calls = [f"{call.name}({call.arguments_json})" for call in answer.tool_calls]
    return "\n".join([answer.content or "", *calls]).strip()
