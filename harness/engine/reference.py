"""References into loop state: the one small grammar shared by conditions, templates and items.

A reference names a root and steps into it::

    reference := ["$"] name step*
    name      := letter-or-underscore word-characters*        e.g. score, output, history
    step      := "." word-characters+                         a key, an attribute, or an index
               | "[" ["-"] digits "]"                         an index; negative counts from the end

So ``score``, ``output.result.score``, ``items.0.name``, ``history[-1].output.done``,
``vars.draft`` and ``$loop.index`` are references. Which roots exist is the caller's business
(a :data:`Root` function); later steps go into mappings by key, sequences by index and objects
by public attribute. A reference that does not resolve is :data:`MISSING`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from harness.core.errors import ConfigError

Root = Callable[[str], Any]
"""Resolves the first part of a reference; returns :data:`MISSING` for an unknown name."""


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""A reference that does not resolve: no output this round, an absent key, an index out of range."""

_NAME = re.compile(r"[A-Za-z_]\w*")
_WORD = re.compile(r"\w+")
_INDEX = re.compile(r"\[(-?\d+)\]")


@lru_cache(maxsize=4096)
def parse_reference(text: str) -> tuple[str, ...]:
    """The parts of ``text`` (``"history[-1].output"`` -> ``("history", "-1", "output")``).

    Raises :class:`ConfigError` naming the reference and the 0-based position of the problem.
    """
    if not isinstance(text, str):
        raise ConfigError(f"reference: expected text, got {type(text).__name__}")
    position = 1 if text.startswith("$") else 0
    name = _NAME.match(text, position)
    if name is None:
        raise _error(text, position, "expected a name (a letter or '_' first)")
    parts, position = [name[0]], name.end()
    while position < len(text):
        if text[position] == ".":
            word = _WORD.match(text, position + 1)
            if word is None:
                raise _error(text, position + 1, "expected a key or an index after '.'")
            parts.append(word[0])
            position = word.end()
        elif text[position] == "[":
            index = _INDEX.match(text, position)
            if index is None:
                raise _error(text, position, "expected '[' integer ']', e.g. [0] or [-1]")
            parts.append(index[1])
            position = index.end()
        else:
            raise _error(text, position, "expected '.' or '[' or the end")
    return tuple(parts)


def _error(text: str, position: int, problem: str) -> ConfigError:
    found = repr(text[position]) if position < len(text) else "the end"
    return ConfigError(f"reference {text!r}: at position {position} ({found}): {problem}")


def lookup(root: Root, path: Sequence[str]) -> Any:
    """Follow ``path`` from ``root(path[0])``; :data:`MISSING` as soon as a step fails."""
    value = root(path[0])
    for part in path[1:]:
        if value is MISSING:
            return MISSING
        value = step(value, part)
    return value


def resolve(root: Root, reference: str) -> Any:
    """The value ``reference`` names, or :data:`MISSING`."""
    return lookup(root, parse_reference(reference))


def step(value: Any, part: str) -> Any:
    """One step of a path into ``value``; :data:`MISSING` if there is nothing there."""
    if value is None:  # before the ABC check, which costs more (a round's output is often None)
        return MISSING
    if type(value) is dict or isinstance(value, Mapping):
        return value.get(part, MISSING)
    if isinstance(value, str | bytes | int | float):
        return MISSING
    if isinstance(value, Sequence):
        try:
            return value[int(part)]
        except IndexError:
            return MISSING
        except ValueError:
            pass  # not an index: a named tuple's fields are read as attributes below
    found = MISSING if part.startswith("_") else getattr(value, part, MISSING)
    return MISSING if callable(found) else found


def as_text(value: Any) -> str:
    """How a value reads as text: strings as they are, ``None`` empty, anything else as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, default=str)
