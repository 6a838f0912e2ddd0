"""A model that answers with the replies a run recorded, and notes where the run now differs.

:class:`ReplayModel` serves a recorded run's replies in order, round by round (the author's, the
summariser's and the critic's, as they were asked), with their recorded usage. Each request it
is sent is checked against the recording: every tool observation in it must be the one the
recorded run saw for the same call (compared after :func:`normalise`), and the request must come
from the role the recording has next. The first difference is kept as a :class:`Divergence`; the
replay goes on, so the gates and the verdict that follow can be compared too.

A recording cut off in its last round (the run was killed) ends there: a request past its last
recorded reply stops the replay (:attr:`ReplayModel.reached_end`), where the recorded run
stopped, and is no divergence.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness.core.errors import ScriptExhausted, Stopped
from harness.core.event_schema import Role
from harness.core.stop import StopReason
from harness.core.trajectory_schema import RecordedReply
from harness.core.usage import Usage
from harness.models.base import Message, Reply, ToolCall, ToolSchema
from harness.models.tokens import CountsTokens, TokenCounter

_SECONDS = re.compile(r"\b\d+\.\d+s\b")
"""A duration as test runners print it (``47 passed in 3.13s``): never the same twice."""


def normalise(text: str, folders: Sequence[str] = ()) -> str:
    """``text`` with what differs between two runs of the same work taken out: the run's own
    folders (its worktree, its checkout) become ``<workspace>``, durations ``<t>s``."""
    for folder in sorted((f for f in folders if f), key=len, reverse=True):
        text = text.replace(folder, "<workspace>")
    return _SECONDS.sub("<t>s", text)


@dataclass(frozen=True)
class RecordedTurn:
    """One recorded model call: who asked, and what the model answered."""

    role: Role
    reply: RecordedReply
    usage: Usage


@dataclass(frozen=True)
class Observation:
    """What a recorded tool call returned: the step of its session, its tool, its text."""

    step: int
    name: str
    text: str


@dataclass(frozen=True)
class Divergence:
    """Where a replay first differs from its recording: the round, the session's step (for a
    tool observation or a model call), what differed, and both sides."""

    round: int
    step: int | None
    what: str
    recorded: str = ""
    now: str = ""

    def describe(self) -> str:
        where = f"round {self.round}" + (f", step {self.step}" if self.step is not None else "")
        lines = [f"{where}: {self.what}"]
        if self.recorded or self.now:
            lines += [f"  recorded: {_excerpt(self.recorded)}", f"  now:      {_excerpt(self.now)}"]
        return "\n".join(lines)


class ReplayModel(CountsTokens):
    """Replies from a recording, round by round; see the module's docstring.

    ``turns`` are each round's model calls in order; ``observations`` what each tool call
    returned, by round and call id; ``folders`` the recorded run's own folders and this
    replay's (see :func:`normalise`); ``cut_round`` the round a killed run's recording stops
    in, if it does: a call past its end stops the replay there (a CANCELLED stop).
    """

    def __init__(
        self,
        turns: Mapping[int, Sequence[RecordedTurn]],
        observations: Mapping[tuple[int, str], Observation],
        *,
        name: str = "replay",
        context_window: int = 128_000,
        folders: Sequence[str] = (),
        cut_round: int | None = None,
    ) -> None:
        self.name = name
        self._turns = {number: list(calls) for number, calls in turns.items()}
        self._observations = dict(observations)
        self.context_window = context_window
        self.folders = list(folders)
        self._round = min(self._turns, default=1)
        self._cursor = 0
        self._checked: set[str] = set()
        self._lock = threading.Lock()
        self._counter = TokenCounter(name)
        self.divergences: list[Divergence] = []
        self.cut_round = cut_round
        self.reached_end = False  # every call of the cut round was made, and one past it
        self.calls_made: dict[int, int] = {}  # model calls served, by round

    def price_per_token(self) -> tuple[float, float]:
        return (0.0, 0.0)

    def begin_round(self, round_number: int) -> None:
        with self._lock:
            self._round, self._cursor = round_number, 0
            if self.cut_round is not None and round_number > self.cut_round:
                cut = self.cut_round  # it ended early when some of its recorded calls were not made
                self.reached_end = self.calls_made.get(cut, 0) >= len(self._turns.get(cut, ()))
                raise Stopped(
                    StopReason.CANCELLED,
                    f"the replay stops where the recording ends, before round {round_number}: "
                    "the recorded run was cut off in the round before",
                )
            if round_number not in self._turns:
                self.divergences.append(
                    Divergence(round_number, None, "the recording has no such round")
                )
                raise ScriptExhausted(f"{self.name}: the recording has no round {round_number}")

    def complete(
        self,
        messages: list[Message],
        tools: list[ToolSchema] | None = None,
        *,
        max_tokens: int | None = None,
    ) -> Reply:
        with self._lock:
            self._compare_observations(messages)
            turns = self._turns.get(self._round, [])
            if self._cursor >= len(turns) and self._round == self.cut_round:
                self.reached_end = True
                raise Stopped(
                    StopReason.CANCELLED,
                    f"the replay stops where the recording ends, in round {self._round} after "
                    f"{len(turns)} model call(s): the recorded run was cut off there",
                )
            if self._cursor >= len(turns):
                self.divergences.append(
                    Divergence(
                        self._round,
                        None,
                        f"model call {self._cursor + 1} was made; the recording of the round "
                        f"ends after {len(turns)}",
                    )
                )
                raise ScriptExhausted(
                    f"{self.name}: the recording of round {self._round} holds {len(turns)} "
                    f"model calls and call {self._cursor + 1} was made"
                )
            turn = turns[self._cursor]
            self._cursor += 1
            self.calls_made[self._round] = self._cursor
            asked = _role_of(messages, tools)
            if asked is not None and asked != ("critic" if turn.role == "critic" else "agent"):
                self.divergences.append(
                    Divergence(
                        self._round,
                        None,
                        f"model call {self._cursor} comes from the {asked}; the recording has "
                        f"the {turn.role}'s",
                    )
                )
        calls = tuple(ToolCall(c.name, c.arguments, c.id) for c in turn.reply.tool_calls)
        recorded = turn.reply
        return Reply(
            recorded.content, calls, turn.usage, recorded.reasoning, truncated=recorded.truncated
        )

    def _compare_observations(self, messages: list[Message]) -> None:
        for message in messages:
            call_id = message.get("tool_call_id")
            if message.get("role") != "tool" or not isinstance(call_id, str):
                continue
            if call_id in self._checked:
                continue
            self._checked.add(call_id)
            recorded = self._observations.get((self._round, call_id))
            if recorded is None:
                continue  # a tool result the recording did not have (the critic's repair)
            now = str(message.get("content") or "")
            if normalise(now, self.folders) != normalise(recorded.text, self.folders):
                self.divergences.append(
                    Divergence(
                        self._round,
                        recorded.step,
                        f"the observation of {recorded.name} differs",
                        recorded.text,
                        now,
                    )
                )


def _role_of(messages: list[Message], tools: list[ToolSchema] | None) -> str | None:
    """Who is asking, as far as a request tells: the critic offers only its verdict tool, the
    agent its own tools; a request without tools does not say."""
    if not tools or not messages:
        return None
    names = [t.get("function", {}).get("name") for t in tools if isinstance(t, dict)]
    return "critic" if names == ["verdict"] else "agent"


def _excerpt(text: str, limit: int = 300) -> str:
    flat = text.replace("\n", "⏎")
    return flat if len(flat) <= limit else flat[:limit] + f"… ({len(text)} characters)"
