"""``{{placeholder}}`` rendering for prompts built inside a loop body.

A placeholder is a dotted path (``{{loop.index}}``, ``{{draft}}``, ``{{result.score}}``;
a leading ``$`` as in ``{{$loop.item}}`` is accepted). Strings render as they are, ``None``
as an empty string, anything else as JSON. A placeholder that does not resolve is an error
naming it, so a typo never reaches a model as literal braces.
"""

from __future__ import annotations

import re

from harness.core.errors import ConfigError
from harness.engine.condition import MISSING, Root, as_text, lookup

_PLACEHOLDER = re.compile(r"\{\{\s*\$?([A-Za-z_][\w]*(?:\.[\w]+)*)\s*\}\}")


def render(text: str, root: Root) -> str:
    """Replace every placeholder in ``text`` with the value its path resolves to."""

    def value(match: re.Match[str]) -> str:
        found = lookup(root, match[1].split("."))
        if found is MISSING:
            raise ConfigError(f"template placeholder {match[0]!r}: {match[1]!r} is not defined")
        return as_text(found)

    return _PLACEHOLDER.sub(value, text)
