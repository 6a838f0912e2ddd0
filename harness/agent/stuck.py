"""Noticing an agent that is going round in circles inside one session.

Two patterns: the same tool call (name and arguments) giving the same result again and again,
and a streak of failed calls (tool errors, command timeouts). At the limit the observation gets
a short note telling the model so; one more such call ends the session as stuck.
"""

from __future__ import annotations

from dataclasses import dataclass, field

REPEAT_NOTE = (
    "[harness] You have made this exact call {count} times and got the same result each time; "
    "it will not change. Try something else."
)
ERROR_NOTE = (
    "[harness] Your last {count} tool calls all failed. Step back and change your approach."
)


@dataclass
class StuckWatch:
    """Counts repeats and failures across one session's tool calls.

    ``max_repeats``: identical calls with identical results before the note (one more ends the
    session). ``max_errors``: consecutive failed calls before the note (one more ends it).
    """

    max_repeats: int = 3
    max_errors: int = 5
    _last: tuple[str, str, str] | None = field(default=None, repr=False)
    _repeats: int = 0
    _errors: int = 0

    def observe(self, name: str, arguments: str, output: str, *, failed: bool) -> str | None:
        """Record one call; the note to add to its observation, if it reached a limit."""
        key = (name, arguments, output)
        self._repeats = self._repeats + 1 if key == self._last else 1
        self._last = key
        self._errors = self._errors + 1 if failed else 0
        if self._repeats == self.max_repeats:
            return REPEAT_NOTE.format(count=self._repeats)
        if self._errors == self.max_errors:
            return ERROR_NOTE.format(count=self._errors)
        return None

    def verdict(self) -> str | None:
        """Why the session is stuck, once a limit has been passed."""
        if self._repeats > self.max_repeats and self._last is not None:
            name, arguments, _ = self._last
            return f"the call {name}({arguments[:200]}) gave the same result {self._repeats} times"
        if self._errors > self.max_errors:
            return f"{self._errors} tool calls in a row failed"
        return None
