"""Permission rules: allow, ask or deny each tool call before it runs (``[permissions]``).

A rule is one of:

* ``TOOL`` — every call of a tool, by name or glob (``write_file``, ``mcp__github__*``, ``web_*``);
* ``run_shell(PATTERN)`` — a shell command, as a glob over its words (``git push*``, ``pytest*``).
  The command line is parsed (:mod:`harness.tools.shell_commands`) and *every* program it would
  run is judged on its own, so ``a && b``, ``$(b)`` or ``sh -c 'b'`` cannot carry ``b`` past a
  rule; deny and ask patterns also match when options stand between the words (``git -C . push``);
* ``TOOL(PATH)`` — a file tool's ``path`` argument, normalised (``./src/../tests/x`` is
  ``tests/x``), as a glob where ``*`` also crosses ``/`` (``write_file(tests/*)``). Given the
  workspace, every name the path reaches in it is judged: the path made relative when it is the
  workspace's absolute path, the path with its symlinks resolved, and each other name of a file
  with hard links (:func:`path_subjects`); a workspace too large to search for them fails closed.

Deny beats ask, ask beats allow; what no rule names gets ``default``. A command line that cannot
be read for certain gets ``unreadable`` (deny, or ask): the rules fail closed. Deciding is pure;
asking a person and recording the decision is the agent's business (:mod:`harness.agent.actions`).
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from harness.tools.shell_commands import Command, Unreadable, commands

Verdict = Literal["allow", "ask", "deny"]
Source = Literal["rule", "default", "unreadable"]

SHELL_TOOL = "run_shell"
WRITE_TOOLS = ("write_file", "edit_file")
"""The built-in tools that change a file."""
PATH_ARGUMENT = "path"
_RULE = re.compile(r"(?P<tool>[A-Za-z0-9_*?\[\]-]+)(?:\((?P<pattern>.*)\))?", re.DOTALL)
_STRICTNESS: dict[Verdict, int] = {"allow": 0, "ask": 1, "deny": 2}
_EXPANDING = "$`*?[{~"
"""Characters that let the shell turn a word into another (after quotes are removed)."""

Fits = Callable[[str, Verdict], bool]
"""Whether a rule's pattern fits the subject, for a rule of that verdict."""


@dataclass(frozen=True)
class Decision:
    """What the rules say of one call: the verdict, the rule that gave it, and what it judged."""

    verdict: Verdict
    subject: str  # the command, path or tool name judged
    rule: str | None = None  # the rule as written, None for the default
    source: Source = "rule"
    reason: str = ""  # why the line was unreadable


class Permissions(BaseModel):
    """``[permissions]``: rules over tool names, shell commands, paths and MCP tools."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    allow: list[str] = []
    ask: list[str] = []
    deny: list[str] = []
    default: Verdict = "allow"  # for a call no rule names
    unreadable: Literal["deny", "ask"] = "deny"  # for a command line that cannot be read
    ask_timeout: float = Field(300, gt=0, le=86_400)  # seconds to wait for `harness approve`
    attended: bool = True  # False: nobody is asked; `unattended` answers at once
    unattended: Literal["deny", "allow"] = "deny"  # the answer to `ask` when nobody can be asked

    @field_validator("allow", "ask", "deny")
    @classmethod
    def _rules(cls, rules: list[str]) -> list[str]:
        for rule in rules:
            match = _RULE.fullmatch(rule.strip())
            if match is None or (match["pattern"] is not None and not match["pattern"].strip()):
                raise ValueError(
                    f"rule {rule!r}: expected TOOL, TOOL(PATH) or run_shell(COMMAND), "
                    "e.g. 'write_file', 'write_file(tests/*)', 'run_shell(git push*)'"
                )
        return [rule.strip() for rule in rules]

    @property
    def reads_commands(self) -> bool:
        """Whether any shell command must be parsed: a command rule, or a default not allow."""
        rules = (_split(rule) for rule in (*self.allow, *self.ask, *self.deny))
        return self.default != "allow" or any(
            pattern is not None and fnmatch.fnmatchcase(SHELL_TOOL, name) for name, pattern in rules
        )

    def guarded(self, tools: tuple[str, ...] = WRITE_TOOLS) -> tuple[str, ...]:
        """The paths, relative to the workspace, that deny and ask rules on ``tools`` guard: each
        pattern's part before its first wildcard, cut back to a whole folder (``tests/*`` guards
        ``tests``; ``*.lock`` guards nothing). The sandbox shows them read-only to commands."""
        found = []
        for rule in (*self.deny, *self.ask):
            name, pattern = _split(rule)
            if pattern is None or not any(fnmatch.fnmatchcase(t, name) for t in tools):
                continue
            literal = re.split(r"[*?\[]", _normal(pattern), maxsplit=1)
            head = literal[0] if len(literal) == 1 else literal[0].rpartition("/")[0]
            if head and head != "." and not head.startswith(".."):
                found.append(head)
        return tuple(dict.fromkeys(found))

    def decide(
        self, tool: str, arguments: Mapping[str, Any], *, workspace: Path | None = None
    ) -> Decision:
        """The verdict on calling ``tool`` with ``arguments``: the strictest of its parts (a path
        judged by every name it reaches in ``workspace``)."""
        if tool == SHELL_TOOL and isinstance(arguments.get("command"), str):
            return self._shell(arguments["command"])
        path = arguments.get(PATH_ARGUMENT)
        if not isinstance(path, str):
            return self._judge(tool, tool, None)
        subjects = path_subjects(path, workspace)
        if subjects is None:
            return Decision(self.unreadable, path, None, "unreadable", HARD_LINK_SEARCH)
        decisions = [self._judge(tool, name, _path_fits(name)) for name in subjects]
        return max(decisions, key=lambda decision: _STRICTNESS[decision.verdict])

    def _shell(self, line: str) -> Decision:
        """The strictest verdict on any program the line runs; a bare ``run_shell`` rule is
        the verdict on what no command rule names."""
        whole = self._judge(SHELL_TOOL, line, None)
        if (whole.verdict == "deny" and whole.source == "rule") or not self.reads_commands:
            return whole  # a bare deny rule: nothing in the line can be allowed
        try:
            found = commands(line)
        except Unreadable as exc:
            unread = Decision(self.unreadable, line, None, "unreadable", str(exc))
            return max(unread, whole, key=lambda decision: _STRICTNESS[decision.verdict])
        decisions = [
            self._judge(SHELL_TOOL, " ".join(command), _command_fits(command), whole, bare=False)
            for command in found
        ]
        return max(decisions, key=lambda decision: _STRICTNESS[decision.verdict], default=whole)

    def _judge(
        self,
        tool: str,
        subject: str,
        fits: Fits | None,
        fallback: Decision | None = None,
        *,
        bare: bool = True,
    ) -> Decision:
        """The strictest rule on ``tool``: a bare one (with ``bare``), or one whose pattern
        ``fits``; ``fallback`` (else the default) when none does."""
        for verdict in ("deny", "ask", "allow"):
            for rule in getattr(self, verdict):
                name, pattern = _split(rule)
                if not fnmatch.fnmatchcase(tool, name):
                    continue
                if (pattern is None and bare) or (
                    pattern is not None and fits is not None and fits(pattern, verdict)
                ):
                    return Decision(verdict, subject, rule)  # type: ignore[arg-type]
        return fallback or Decision(self.default, subject, None, "default")


def matches(pattern: str, command: Command, *, loose: bool) -> bool:
    """Whether ``command`` fits ``pattern``, a glob over its words joined by spaces (``git push*``).

    ``loose`` also lets the pattern's words after the program match the command's words in order
    with others between them (``git push*`` fits ``git -C . push``), and lets a command of the
    pattern's program fit whenever one of its words holds an expansion or a glob the shell would
    fill in (``git pu$@sh``, ``git p*``): deny and ask rules are read so, so that options put in
    front or words the shell rewrites cannot slip a command past them.
    """
    if fnmatch.fnmatchcase(" ".join(command), pattern):
        return True
    words = pattern.split()
    if not loose or not words or not command or not fnmatch.fnmatchcase(command[0], words[0]):
        return False
    if any(char in word for word in command[1:] for char in _EXPANDING):
        return True
    rest = iter(command[1:])
    wanted = [word for word in words[1:] if word != "*"]
    return all(any(fnmatch.fnmatchcase(word, want) for word in rest) for want in wanted)


def _command_fits(command: Command) -> Fits:
    def fits(pattern: str, verdict: Verdict) -> bool:
        return matches(pattern, command, loose=verdict != "allow")

    return fits


def _path_fits(name: str) -> Fits:
    def fits(pattern: str, _: Verdict) -> bool:
        return fnmatch.fnmatchcase(name, pattern)

    return fits


def _split(rule: str) -> tuple[str, str | None]:
    match = _RULE.fullmatch(rule)
    assert match is not None  # checked when the rules were read
    return match["tool"], match["pattern"]


MAX_LINK_SEARCH = 100_000
"""Entries of the workspace looked at for a hard-linked file's other names; past it, unknown."""
HARD_LINK_SEARCH = f"the file has hard links and the workspace holds over {MAX_LINK_SEARCH} entries"


def path_subjects(path: str, workspace: Path | None) -> list[str] | None:
    """The names ``path`` reaches inside ``workspace``, each relative to it: as written, as the
    workspace's absolute path made relative, with its symlinks resolved, and every other name
    of a regular file with hard links; None when those cannot all be found."""
    names = [_normal(path)]
    if workspace is None:
        return names
    roots = list(
        dict.fromkeys([Path(os.path.abspath(workspace)), Path(os.path.realpath(workspace))])
    )
    given = Path(path) if os.path.isabs(path) else roots[0] / path
    real = Path(os.path.realpath(given))
    for candidate in (Path(os.path.normpath(given)), real):
        for root in roots:
            if candidate.is_relative_to(root):
                names.append(candidate.relative_to(root).as_posix() or ".")
    try:
        status = real.stat()
    except OSError:
        return list(dict.fromkeys(names))
    if stat.S_ISREG(status.st_mode) and status.st_nlink > 1:
        linked = _other_names(roots[-1], (status.st_dev, status.st_ino))
        if linked is None:
            return None
        names += linked
    return list(dict.fromkeys(names))


def _other_names(root: Path, inode: tuple[int, int]) -> list[str] | None:
    """The workspace's names of the file ``inode`` (``.git`` left out); None past the bound."""
    found: list[str] = []
    seen = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        seen += len(dirs) + len(files)
        if seen > MAX_LINK_SEARCH:
            return None
        for name in files:
            try:
                status = os.lstat(os.path.join(folder, name))
            except OSError:
                continue
            if (status.st_dev, status.st_ino) == inode:
                found.append((Path(folder) / name).relative_to(root).as_posix())
    return found


def _normal(path: str) -> str:
    """``path`` as the file tools resolve it inside the workspace, for matching."""
    return posixpath.normpath(path.replace("\\", "/")).lstrip("/") or "."
