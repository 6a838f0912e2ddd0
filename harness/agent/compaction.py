"""Context compaction: keep a long agent session inside the model's input window.

The agent calls ``maybe_compact`` before every model call. Below the trigger (``threshold`` of
the input window) the messages pass through unchanged; above it a strategy shrinks them:

* :class:`Summarize` keeps the system prompt and the last ``keep_last`` messages (a tool call is
  never separated from its results) and replaces the older ones with one ``user`` message: a
  summary the model writes under :data:`SUMMARY_INSTRUCTION`, followed by the :class:`Ledger`.
* :class:`MaskObservations` replaces old tool outputs with a one-line placeholder and keeps
  every other message; it never calls a model.
* :class:`NoCompaction` passes everything through.

Both strategies accept ``soft_threshold``: past it (and below ``threshold``) old observations are
masked early, which is cheap and keeps the context small long before a summary is needed.

Tokens are counted by the model's own ``count_tokens`` (its
:class:`~harness.models.tokens.TokenCounter`), so a message counted here is not tokenised again for
the model call. While the model's cheap ceiling (:func:`~harness.models.base.token_ceiling`, the
UTF-8 size) is below every trigger, nothing is tokenised at all. Tool schemas are not counted; the headroom above the threshold covers them. When :data:`MAX_ATTEMPTS` attempts
cannot bring the context under the threshold, :class:`ContextOverflow` stops the session.
The summary prompt is in :mod:`harness.agent.summary_prompt`, the transcript helpers in
:mod:`harness.agent.transcript`.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Literal, Protocol, runtime_checkable

from harness.agent.config import AGENT_DEFAULTS, AgentConfig
from harness.agent.ledger import Ledger
from harness.agent.summary_prompt import SUMMARY_INSTRUCTION, render_summary, summary_request
from harness.agent.transcript import (
    calls_by_id,
    describe,
    mask_observations,
    system_prefix,
    tail_start,
)
from harness.core.errors import ConfigError, HarnessError
from harness.core.event_schema import Compaction as CompactionEvent
from harness.core.section import check_field
from harness.core.sink import NULL_SINK, EventSink
from harness.models.base import Message, Model, token_ceiling
from harness.models.budget import metered

MAX_ATTEMPTS = 2
"""Attempts per ``maybe_compact`` call before :class:`ContextOverflow`."""

_MIN_SUMMARY_TOKENS = 64  # below this much room a summary cannot help
_CHARS_PER_TOKEN = 3  # conservative, for sizing the summary request before counting it


class ContextOverflow(HarnessError):
    """Compaction could not bring the context under the threshold; the session must stop."""

    reason = "context_full"

    def __init__(self, tokens: int, limit: int, detail: str) -> None:
        super().__init__(
            f"context still {tokens:,} tokens > threshold {limit:,} after compaction: {detail}"
        )
        self.tokens = tokens
        self.limit = limit


@dataclass(frozen=True)
class CompactionRecord:
    """One compaction: what it cost, what it saved and what it took out of the context."""

    strategy: str
    tokens_before: int
    tokens_after: int
    duration: float
    dropped: tuple[str, ...]
    trigger: Literal["hard", "soft"] = "hard"  # "soft": early masking below the threshold
    attempts: int = 1
    model_tokens: int = 0  # prompt + completion tokens of summary requests


@dataclass(frozen=True)
class _Pass:
    """What one compaction call knows: the model, the ledger, the window and the limit."""

    model: Model
    ledger: Ledger | None
    window: int
    limit: int

    def tokens(self, *messages: Message) -> int:
        return self.model.count_tokens(list(messages))


@runtime_checkable
class Compaction(Protocol):
    """Shrinks a session's messages when they grow too large for the model."""

    def maybe_compact(
        self,
        messages: list[Message],
        *,
        model: Model,
        ledger: Ledger | None = None,
        events: EventSink = NULL_SINK,
    ) -> list[Message]: ...


@dataclass(eq=False)
class NoCompaction:
    """Never compacts: the session fails at the provider once it outgrows the window."""

    name = "none"
    records: list[CompactionRecord] = field(default_factory=list, init=False)

    def maybe_compact(
        self,
        messages: list[Message],
        *,
        model: Model,
        ledger: Ledger | None = None,
        events: EventSink = NULL_SINK,
    ) -> list[Message]:
        return messages


@dataclass(kw_only=True, eq=False)
class _Strategy:
    """The trigger, the soft trigger, the attempt guard and the records shared by strategies."""

    name = ""
    threshold: float = AGENT_DEFAULTS.compaction_threshold
    context_window: int | None = None
    keep_last: int = 6
    soft_threshold: float | None = None
    records: list[CompactionRecord] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        soft = self.soft_threshold
        if soft is not None and not 0 < soft < self.threshold:
            raise ConfigError(f"soft_threshold: must be in (0, threshold), got {soft!r}")
        check_field(AgentConfig, "context_window", self.context_window)
        if self.keep_last < 1:
            raise ConfigError(f"keep_last: must be at least 1, got {self.keep_last!r}")
        self.threshold = check_field(
            AgentConfig, "compaction_threshold", self.threshold, name="threshold"
        )

    def maybe_compact(
        self,
        messages: list[Message],
        *,
        model: Model,
        ledger: Ledger | None = None,
        events: EventSink = NULL_SINK,
    ) -> list[Message]:
        window = self.context_window or model.context_window
        limit = int(window * self.threshold)
        quiet = limit if self.soft_threshold is None else window * self.soft_threshold
        if token_ceiling(model, messages) <= quiet:  # far below any trigger: nothing to count
            return messages
        ctx = _Pass(model, ledger, window, limit)
        before = model.count_tokens(messages)
        started = time.monotonic()
        if before <= ctx.limit:
            if self.soft_threshold is None or before <= window * self.soft_threshold:
                return messages
            result, dropped = mask_observations(messages, keep=self.keep_last)
            if dropped:
                after = model.count_tokens(result)
                took = time.monotonic() - started
                soft = CompactionRecord(MaskObservations.name, before, after, took, dropped, "soft")
                self._record(soft, events)
            return result
        result, dropped, spent = messages, (), 0
        for attempt in range(1, MAX_ATTEMPTS + 1):
            result, lost, used = self._shrink(result, attempt, ctx)
            dropped, spent = dropped + lost, spent + used
            after = model.count_tokens(result)
            if after <= ctx.limit:
                took = time.monotonic() - started
                hard = CompactionRecord(
                    self.name, before, after, took, dropped, "hard", attempt, spent
                )
                self._record(hard, events)
                return result
        largest = max(result, key=ctx.tokens)
        raise ContextOverflow(
            after,
            ctx.limit,
            f"{self.name} made {MAX_ATTEMPTS} attempts; the largest message left is "
            f"{describe(largest, calls_by_id(result))} ({ctx.tokens(largest):,} tokens)",
        )

    def _shrink(
        self, messages: list[Message], attempt: int, ctx: _Pass
    ) -> tuple[list[Message], tuple[str, ...], int]:
        """One attempt: the smaller messages, what it dropped, model tokens it spent."""
        raise NotImplementedError

    def _record(self, record: CompactionRecord, events: EventSink) -> None:
        self.records.append(record)
        events.emit(CompactionEvent(**asdict(record)))


class MaskObservations(_Strategy):
    """Replace old tool outputs with one-line placeholders; no model call.

    ``keep_last`` is the number of most recent tool outputs kept verbatim. A second attempt, if
    the first is not enough, masks those too.
    """

    name = "mask_observations"

    def _shrink(
        self, messages: list[Message], attempt: int, ctx: _Pass
    ) -> tuple[list[Message], tuple[str, ...], int]:
        result, dropped = mask_observations(messages, keep=self.keep_last if attempt == 1 else 0)
        return result, dropped, 0


@dataclass(kw_only=True, eq=False)
class Summarize(_Strategy):
    """Replace all but the system prompt and the last ``keep_last`` messages with a summary.

    The summary request carries :data:`SUMMARY_INSTRUCTION`, the ledger and the older messages
    (each clipped head + tail to ``clip_chars``), with ``max_tokens`` at most
    ``summary_max_tokens``. A second attempt keeps only the last message (or tool-call group)
    and asks for a summary half as long.
    """

    name = "summarize"
    summary_max_tokens: int = 2_000
    clip_chars: int = 4_000

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.summary_max_tokens < _MIN_SUMMARY_TOKENS:
            raise ConfigError(
                f"summary_max_tokens: must be at least {_MIN_SUMMARY_TOKENS}, "
                f"got {self.summary_max_tokens!r}"
            )

    def _shrink(
        self, messages: list[Message], attempt: int, ctx: _Pass
    ) -> tuple[list[Message], tuple[str, ...], int]:
        head = system_prefix(messages)
        cut = tail_start(messages, self.keep_last if attempt == 1 else 1, floor=head)
        older, tail = messages[head:cut], messages[cut:]
        ledger_text = ctx.ledger.render() if ctx.ledger else ""
        framing = ctx.tokens({"role": "user", "content": ledger_text}) + 32
        kept = ctx.tokens(*messages[:head], *tail)
        max_tokens = min(self.summary_max_tokens // attempt, ctx.limit - kept - framing)
        if not older or max_tokens < _MIN_SUMMARY_TOKENS:
            return messages, (), 0
        instruction = ctx.tokens({"role": "system", "content": SUMMARY_INSTRUCTION})
        request_room = ctx.window - max_tokens - instruction - framing
        clip = min(self.clip_chars, max(200, request_room * _CHARS_PER_TOKEN // len(older)))
        request = summary_request(older, ledger_text, clip)
        reply = metered(ctx.model).complete(request, max_tokens=max_tokens)
        content = render_summary(reply.content or "", ledger_text, len(older))
        calls = calls_by_id(messages)
        dropped = tuple(describe(m, calls) for m in older)
        summary = {"role": "user", "content": content}
        return [*messages[:head], summary, *tail], dropped, reply.usage.total_tokens


def make_compaction(
    spec: str | Compaction | None,
    *,
    threshold: float = AGENT_DEFAULTS.compaction_threshold,
    context_window: int | None = None,
) -> Compaction:
    """The strategy named by ``spec`` (``none``, ``summarize``, ``mask_observations``) or ``spec``."""
    if spec is None or spec == "none":
        return NoCompaction()
    if spec in ("summarize", "mask_observations"):
        strategy = Summarize if spec == "summarize" else MaskObservations
        return strategy(threshold=threshold, context_window=context_window)
    if not isinstance(spec, str) and isinstance(spec, Compaction):
        return spec
    raise ConfigError(
        f"compaction: unknown strategy {spec!r}; expected 'none', 'summarize', "
        "'mask_observations' or an object with maybe_compact()"
    )


def compaction_of(config: AgentConfig) -> Compaction:
    """The strategy ``[agent]`` names, with its threshold and window override."""
    return make_compaction(
        config.compaction,
        threshold=config.compaction_threshold,
        context_window=config.context_window,
    )
