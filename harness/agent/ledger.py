"""The session ledger: what no compaction may drop.

Summaries are known to lose exactly the things an agent needs to carry on: the goal, the
project's rules, the unfinished items, and the files and commands already used. The agent
creates a :class:`Ledger` at the start of a session and notes every tool call in it; every
compaction that replaces messages puts :meth:`Ledger.render` back into the context verbatim.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from harness.core.text import truncate

PATH_ARGUMENTS = ("path", "file", "file_path", "filename")
"""Tool-call arguments whose value is a file path."""

COMMAND_ARGUMENTS = ("command", "cmd")
"""Tool-call arguments whose value is a shell command."""

MAX_COMMAND_CHARS = 300
"""A longer command (a heredoc writing a file, say) is rendered head + tail to this size."""

_NOT_A_PATH = frozenset({"", ".", "./"})


class Ledger:
    """Goal, rules, open items, and every file path and command a session has used."""

    def __init__(
        self, goal: str, rules: Sequence[str] = (), open_items: Sequence[str] = ()
    ) -> None:
        self.goal = goal
        self.rules = list(rules)
        self.open_items = list(open_items)
        self._paths: dict[str, None] = {}  # insertion-ordered set
        self._commands: Counter[str] = Counter()  # command -> times run, first run first

    @property
    def paths(self) -> list[str]:
        """File paths the session's tool calls named, first use first."""
        return list(self._paths)

    @property
    def commands(self) -> list[str]:
        """Shell commands the session ran, first run first, each once."""
        return list(self._commands)

    def note_tool_call(self, name: str, arguments: Mapping[str, Any]) -> None:
        """Record the paths and commands in one tool call's arguments."""
        for key in PATH_ARGUMENTS:
            value = arguments.get(key)
            if isinstance(value, str) and value.strip() not in _NOT_A_PATH:
                self._paths.setdefault(value.strip(), None)
        for key in COMMAND_ARGUMENTS:
            value = arguments.get(key)
            if isinstance(value, str) and value.strip():
                self._commands[value.strip()] += 1

    def render(self) -> str:
        """The ledger as Markdown-ish text for the model to read."""
        lines = ["Goal:", self.goal.strip()]
        if self.rules:
            lines += ["Rules:", *(f"- {rule}" for rule in self.rules)]
        if self.open_items:
            lines += ["Open items:", *(f"- [ ] {item}" for item in self.open_items)]
        if self._paths:
            lines += ["Files used:", *(f"- {path}" for path in self._paths)]
        if self._commands:
            lines.append("Commands run:")
            for command, times in self._commands.items():
                shown = truncate(command, MAX_COMMAND_CHARS)
                lines.append(f"- {shown}" + (f"  (x{times})" if times > 1 else ""))
        return "\n".join(lines)
