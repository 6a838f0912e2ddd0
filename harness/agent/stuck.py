"""Noticing an agent that is going round in circles inside one session.

Two patterns: a cycle of tool calls giving the same results again and again, and a streak of
failed calls (tool errors, command timeouts). A cycle has a period from 1 (the same call, A A A)
up to :attr:`StuckWatch.max_period` (A B A B, A B C A B C, ...); a call counts as the same when
its tool, its arguments and its result are all the same, so calls whose results change (edits
that differ, tests that fail differently) are progress, never a cycle. At the limit the
observation gets a short note telling the model so; one more call that keeps the cycle (or the
streak) going ends the session as stuck.
"""

from __future__ import annotations

import hashlib
from collections import deque
from dataclasses import dataclass, field

REPEAT_NOTE = (
    "[harness] You have made this exact call {count} times and got the same result each time; "
    "it will not change. Try something else."
)
CYCLE_NOTE = (
    "[harness] Your last {count} calls went round the same {period} calls ({calls}) {times} "
    "times with the same results each time; going round again will not change them. Try "
    "something else."
)
ERROR_NOTE = (
    "[harness] Your last {count} tool calls all failed. Step back and change your approach."
)


@dataclass
class StuckWatch:
    """Counts cycles and failures across one session's tool calls.

    ``max_repeats``: times a cycle of calls (one call, or up to ``max_period`` calls in turn)
    goes round with identical results before the note; one more call that continues it ends the
    session. ``max_errors``: consecutive failed calls before the note (one more ends it).
    """

    max_repeats: int = 3
    max_errors: int = 5
    max_period: int = 4
    _recent: deque[tuple[bytes, str]] = field(default_factory=deque, repr=False)
    _runs: dict[int, int] = field(default_factory=dict, repr=False)
    _errors: int = 0

    def observe(self, name: str, arguments: str, output: str, *, failed: bool) -> str | None:
        """Record one call; the note to add to its observation, if it reached a limit."""
        key = hashlib.sha256("\0".join((name, arguments, output)).encode()).digest()
        self._recent.append((key, f"{name}({arguments[:200]})"))
        if len(self._recent) > self.max_period + 1:
            self._recent.popleft()
        for period in range(1, self.max_period + 1):
            same = len(self._recent) > period and self._recent[-1 - period][0] == key
            self._runs[period] = self._runs.get(period, 0) + 1 if same else 0
        self._errors = self._errors + 1 if failed else 0
        cycle = self._cycle()
        if cycle is not None and self._runs[cycle] == self._limit(cycle):
            return self._note(cycle)
        if self._errors == self.max_errors:
            return ERROR_NOTE.format(count=self._errors)
        return None

    def verdict(self) -> str | None:
        """Why the session is stuck, once a limit has been passed."""
        cycle = self._cycle()
        if cycle is not None and self._runs[cycle] > self._limit(cycle):
            count = self._runs[cycle] + cycle  # the calls of the cycle in a row
            if cycle == 1:
                return f"the call {self._recent[-1][1]} gave the same result {count} times"
            return (
                f"{count} calls in a row went round the same {cycle} calls "
                f"({self._calls(cycle)}) with the same results"
            )
        if self._errors > self.max_errors:
            return f"{self._errors} tool calls in a row failed"
        return None

    def _limit(self, period: int) -> int:
        """Matches with the call ``period`` back once the cycle went round ``max_repeats`` times."""
        return period * (self.max_repeats - 1)

    def _cycle(self) -> int | None:
        """The shortest period the latest calls repeat at up to the limit, if any."""
        for period in range(1, self.max_period + 1):
            if self._runs.get(period, 0) >= self._limit(period):
                return period
        return None

    def _calls(self, period: int) -> str:
        return ", ".join(label for _, label in list(self._recent)[-period:])

    def _note(self, period: int) -> str:
        if period == 1:
            return REPEAT_NOTE.format(count=self.max_repeats)
        return CYCLE_NOTE.format(
            count=period * self.max_repeats,
            period=period,
            calls=self._calls(period),
            times=self.max_repeats,
        )
