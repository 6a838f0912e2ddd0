"""Budgets over a whole run, checked before every model call so a run never overspends."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import get_args

from harness.core.budget import Budget
from harness.core.errors import ConfigError, Stopped
from harness.core.event_schema import BudgetCheck, ModelCall, Role
from harness.core.exchange import Exchange
from harness.core.redact import Redactor
from harness.core.sink import NULL_SINK, EventSink
from harness.core.stop import StopReason
from harness.core.usage import Usage
from harness.models import call_threads
from harness.models.base import Message, Model, Reply, ToolSchema, token_ceiling
from harness.models.redaction import Redact, RequestRedactor
from harness.models.wrapper import Wrapper

DEFAULT_MAX_TOKENS = 4096
"""Completion tokens a call may use when neither the caller nor the model (its ``max_tokens``)
says; the worst case a budget checks."""


@dataclass
class Meter:
    """Running totals of a run against its :class:`Budget`. Thread-safe.

    ``prior`` and ``prior_seconds`` are what earlier processes of the same loop already spent
    (a re-run or a resume): the budget covers them too. ``usage`` and ``elapsed`` are this
    process's own. ``on_record`` is called after every recorded call (to save the spend).
    ``waited`` is the time spent :meth:`paused` (waiting for a person), which the time budget
    does not count.
    """

    budget: Budget = field(default_factory=Budget)
    clock: Callable[[], float] = time.monotonic
    usage: Usage = field(default_factory=Usage)
    started: float = field(default=0.0)
    prior: Usage = field(default_factory=Usage)
    prior_seconds: float = 0.0
    on_record: Callable[[Meter], None] | None = None
    waited: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self.started = self.started or self.clock()

    @property
    def elapsed(self) -> float:
        """Seconds of this process that count against the time budget (waits left out)."""
        return self.clock() - self.started - self.waited

    @contextmanager
    def paused(self) -> Iterator[None]:
        """The time budget stands still inside the block (a person is being waited for)."""
        start = self.clock()
        try:
            yield
        finally:
            with self._lock:
                self.waited += self.clock() - start

    @property
    def total(self) -> Usage:
        """What the loop has spent in all: earlier processes and this one."""
        return self.prior + self.usage

    def remaining_seconds(self) -> float | None:
        """Seconds left of the time budget (never below 0); None without a time budget."""
        if self.budget.seconds is None:
            return None
        return max(self.budget.seconds - self.prior_seconds - self.elapsed, 0.0)

    def check_time(self) -> None:
        left = self.remaining_seconds()
        if left is not None and left <= 0:
            spent = self.prior_seconds + self.elapsed
            raise Stopped(
                StopReason.TIMEOUT,
                f"time budget of {self.budget.seconds:g}s used ({spent:.1f}s elapsed)",
            )

    def check(self, tokens: int, cost_usd: float) -> None:
        """Raise :class:`Stopped` if a call costing at most ``tokens``/``cost_usd`` could cross a budget."""
        self.check_time()
        stop = self.overrun(tokens, cost_usd)
        if stop is not None:
            raise stop

    def overrun(self, tokens: int, cost_usd: float) -> Stopped | None:
        """The stop a call costing up to ``tokens``/``cost_usd`` would cause; None if it fits."""
        with self._lock:
            used = self.prior + self.usage
        if self.budget.tokens is not None and used.total_tokens + tokens > self.budget.tokens:
            return Stopped(
                StopReason.BUDGET_TOKENS,
                f"token budget: {used.total_tokens} used + up to {tokens} for the next call "
                f"would exceed {self.budget.tokens}",
            )
        if self.budget.cost_usd is not None and used.cost_usd + cost_usd > self.budget.cost_usd:
            return Stopped(
                StopReason.BUDGET_COST,
                f"cost budget: ${used.cost_usd:.4f} used + up to ${cost_usd:.4f} for the next "
                f"call would exceed ${self.budget.cost_usd:.4f}",
            )
        return None

    def record(self, usage: Usage) -> None:
        with self._lock:
            self.usage = self.usage + usage
        if self.on_record is not None:
            self.on_record(self)

    def describe_remaining(self) -> str:
        """One line for the agent's task: what is left of each budget."""
        parts = []
        total = self.total
        if self.budget.tokens is not None:
            parts.append(f"{max(self.budget.tokens - total.total_tokens, 0)} tokens")
        if self.budget.cost_usd is not None:
            parts.append(f"${max(self.budget.cost_usd - total.cost_usd, 0):.4f}")
        left = self.remaining_seconds()
        if left is not None:
            parts.append(f"{left:.0f}s")
        return ", ".join(parts) if parts else "no budget limit"


ROLES: tuple[Role, ...] = get_args(Role)
"""Who may call a model: the agent (author), the critic, or compaction (summariser)."""


class MeteredModel(Wrapper):
    """A model whose every call is redacted, checked against a :class:`Meter` first and recorded
    after: the one door through which the harness's requests leave the process.

    Every request's messages and tool schemas pass through ``redact`` (default: a
    :class:`Redactor` over this process's environment; a run passes its own) before they are
    counted or sent, each message once (see :class:`~harness.models.redaction.RequestRedactor`);
    the wrapped model never sees a secret the redactor knows. Views for other roles (critic, summariser) share the meter and
    the redactor: ``model.for_role("critic")``.
    A call without ``max_tokens`` gets the model's own ``max_tokens`` attribute (as
    :class:`~harness.models.litellm_model.LiteLLMModel` has), else ``default_max_tokens``; the budget
    is checked against that limit and the request carries it.
    Each call is one ``model_call`` event to ``events``, carrying what was said (the request as
    it is sent, after redaction, and the reply) for the run's trajectory.
    """

    def __init__(
        self,
        model: Model,
        meter: Meter | None = None,
        *,
        role: Role = "author",
        events: EventSink = NULL_SINK,
        default_max_tokens: int = DEFAULT_MAX_TOKENS,
        redact: Redact | None = None,
    ) -> None:
        if role not in ROLES:
            raise ConfigError(f"role: expected one of {', '.join(ROLES)}, got {role!r}")
        self.inner = model
        self.meter = meter or Meter()
        self.role = role
        self.events = events
        self.default_max_tokens = default_max_tokens
        self.redact = redact or Redactor().redact_text
        self.requests = RequestRedactor(self.redact)
        self.name = model.name

    def for_role(self, role: Role, model: Model | None = None) -> MeteredModel:
        return MeteredModel(
            model or self.inner,
            self.meter,
            role=role,
            events=self.events,
            default_max_tokens=self.default_max_tokens,
            redact=self.redact,
        )

    def complete(
        self,
        messages: list[Message],
        tools: list[ToolSchema] | None = None,
        *,
        max_tokens: int | None = None,
    ) -> Reply:
        messages = self.requests.redact(messages)
        tools = self.requests.tools(tools)
        if max_tokens is None:
            max_tokens = getattr(self.inner, "max_tokens", None) or self.default_max_tokens
        price_in, price_out = self.inner.price_per_token()

        def worst(prompt: int) -> tuple[int, float]:
            return prompt + max_tokens, prompt * price_in + max_tokens * price_out

        worst_tokens, worst_cost = worst(token_ceiling(self.inner, messages, tools))
        try:
            self.meter.check_time()
            if self.meter.overrun(worst_tokens, worst_cost) is not None:  # the count decides
                worst_tokens, worst_cost = worst(self.inner.count_tokens(messages, tools))
                self.meter.check(worst_tokens, worst_cost)
        except Stopped as stop:
            self.events.emit(
                BudgetCheck(
                    role=self.role,
                    estimated_tokens=worst_tokens,
                    estimated_cost=worst_cost,
                    reason=stop.message,
                )
            )
            raise
        started = time.monotonic()
        reply = _within(
            lambda: self.inner.complete(messages, tools, max_tokens=max_tokens), self.meter
        )
        latency = time.monotonic() - started
        self.meter.record(reply.usage)
        self.events.emit(
            ModelCall(
                role=self.role,
                model=self.inner.name,
                prompt_tokens=reply.usage.prompt_tokens,
                completion_tokens=reply.usage.completion_tokens,
                cost_usd=reply.usage.cost_usd,
                latency=latency,
                unpriced=reply.usage.unpriced_calls > 0,
                cached_tokens=reply.usage.cached_tokens,
                exchange=Exchange(messages, tools, max_tokens, reply),
            )
        )
        return reply


def metered(model: Model, *, events: EventSink = NULL_SINK) -> MeteredModel:
    """``model`` itself when it is a :class:`MeteredModel`, else ``model`` behind one of its own
    (no budget; requests redacted of the environment's secrets). Whatever calls a model it was
    handed calls it through this, so no request skips redaction."""
    return model if isinstance(model, MeteredModel) else MeteredModel(model, events=events)


def _within(call: Callable[[], Reply], meter: Meter) -> Reply:
    """``call()``, cut with a TIMEOUT stop when ``meter``'s time budget runs out.

    The call runs on a daemon thread (:mod:`harness.models.call_threads`) that is left behind at
    the deadline: a hung model or provider cannot hold the run past its time budget. What the
    abandoned call would have cost is not known, so it is not recorded.
    """
    seconds = meter.remaining_seconds()
    if seconds is None:
        return call()
    pending = call_threads.start(call)
    if not pending.ended.wait(seconds):
        raise Stopped(
            StopReason.TIMEOUT,
            f"time budget of {meter.budget.seconds:g}s used: a model call was cut off after "
            f"{seconds:.1f}s",
        )
    return pending.outcome()
