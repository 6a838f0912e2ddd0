"""A recording that answers until it no longer can, then a live model: ``harness replay --live``.

A :class:`Handover` holds one :class:`~harness.models.replay.ReplayModel`; each role's model
(:meth:`Handover.model`: the author's, each critic's) asks it first. The recording answers as
long as the replay agrees with it. At the first call it cannot answer as recorded (a tool
observation in the request that differs, a role the recording does not have next, a model call
or a round the recording lacks, the end of a cut-off recording), the recording is set aside for
good: that call and every later one, of every role, go to the live models, and the run goes on as
a normal run. Where and why that happened is kept as a :class:`Takeover`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from harness.core.errors import ScriptExhausted, Stopped
from harness.models.base import Message, Model, Reply, ToolSchema
from harness.models.replay import Divergence, ReplayModel
from harness.models.wrapper import Wrapper

CUT_OFF = "the recording ends there (the recorded run was cut off)"


@dataclass(frozen=True)
class Takeover:
    """Where the live models took over: the round, the model call of that round (1: its first,
    counting the author's, the summariser's and the critic's calls as the recording does), and
    why; ``divergence`` is the difference that made it, None at the end of a cut-off recording."""

    round: int
    call: int
    why: str
    divergence: Divergence | None = None

    def describe(self) -> str:
        return f"the live model took over at round {self.round}, model call {self.call}: {self.why}"


class Handover:
    """The recording's answers until the first call it cannot answer as recorded; see the
    module's docstring. Shared by every role's model, so one take-over moves them all."""

    def __init__(self, replay: ReplayModel) -> None:
        self.replay = replay
        self.takeover: Takeover | None = None
        self._round = 1
        self._lock = threading.Lock()
        self._models: dict[int, LiveModel] = {}

    def model(self, live: Model) -> LiveModel:
        """The model that asks the recording first and ``live`` from the take-over on (one per
        live model, so a model shared by two roles is still one model to the loop)."""
        return self._models.setdefault(id(live), LiveModel(self, live))

    @property
    def live(self) -> bool:
        return self.takeover is not None

    def begin_round(self, round_number: int) -> None:
        with self._lock:
            self._round = round_number
            if self.live:
                return
            seen = len(self.replay.divergences)
            try:
                self.replay.begin_round(round_number)
            except (Stopped, ScriptExhausted):
                self._take_over(1, seen)

    def answer(
        self, messages: list[Message], tools: list[ToolSchema] | None, max_tokens: int | None
    ) -> Reply | None:
        """The recorded reply to this call, or None when it is (from now on) the live model's."""
        with self._lock:
            if self.live:
                return None
            seen = len(self.replay.divergences)
            try:
                reply = self.replay.complete(messages, tools, max_tokens=max_tokens)
            except (Stopped, ScriptExhausted):
                self._take_over(self.replay.calls_made.get(self._round, 0) + 1, seen)
                return None
            if len(self.replay.divergences) > seen:
                self._take_over(self.replay.calls_made.get(self._round, 0), seen)
                return None
            return reply

    def _take_over(self, call: int, seen: int) -> None:
        new = self.replay.divergences[seen:]
        if new:
            found = new[0]
            why = found.what + (f" (step {found.step})" if found.step is not None else "")
            self.takeover = Takeover(self._round, call, why, found)
        else:
            self.takeover = Takeover(self._round, call, CUT_OFF)
        for model in self._models.values():
            model.name = model.live.name


class LiveModel(Wrapper):
    """One role's model in a live replay: the recording's replies through :class:`Handover`,
    then ``live``'s. Its :attr:`inner` (so its name, window and counts) is the recording until
    the take-over and the live model after, so compaction and the records follow the model that
    answers; its price is the live model's throughout."""

    def __init__(self, handover: Handover, live: Model) -> None:
        self.handover = handover
        self.live = live
        self.name = self.inner.name  # a Model's name is an attribute: the take-over sets it

    @property
    def inner(self) -> Model:  # type: ignore[override]  # read-only: it follows the take-over
        return self.live if self.handover.live else self.handover.replay

    def price_per_token(self) -> tuple[float, float]:
        """The live model's, from the start: any call may be the one it takes over, so a budget
        checks each call before it at the price it may cost."""
        return self.live.price_per_token()

    def begin_round(self, round_number: int) -> None:
        self.handover.begin_round(round_number)
        if self.handover.live:  # then the inner model is the live one
            super().begin_round(round_number)

    def complete(
        self,
        messages: list[Message],
        tools: list[ToolSchema] | None = None,
        *,
        max_tokens: int | None = None,
    ) -> Reply:
        reply = self.handover.answer(messages, tools, max_tokens)
        if reply is not None:
            return reply
        return self.live.complete(messages, tools, max_tokens=max_tokens)
