"""A model's family: which maker's judgement a model string stands for.

A critic of the author's own family grades leniently, so a critic panel may prefer models of
another family (``[critic] prefer_other_family``). The family is the provider prefix of the
model string, lower-cased: ``openai/gpt-4o`` and ``openai/o3`` are ``openai``,
``anthropic/claude-sonnet-4-5`` is ``anthropic``. A name without a prefix is its own family up
to its first ``-`` or ``:`` (``gpt-4o`` is ``gpt``, ``scripted:judge.json`` is ``scripted``), so
write ``provider/model`` where families must compare across spellings.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_HEAD = re.compile(r"^[^-:]*")


def model_family(name: str) -> str:
    """The family of the model string ``name`` (see the module doc)."""
    prefix, slash, _ = name.strip().partition("/")
    if slash:
        return prefix.lower()
    found = _HEAD.match(name.strip())
    return (found.group(0) if found else name).lower()


def other_families_first(candidates: Sequence[str], author: str) -> list[str]:
    """``candidates`` with those of another family than ``author``'s first, order otherwise kept."""
    family = model_family(author)
    return sorted(candidates, key=lambda name: model_family(name) == family)
