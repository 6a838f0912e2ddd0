"""``{{placeholder}}`` rendering for prompts built inside a loop body.

A placeholder is a reference (:mod:`harness.engine.reference`): ``{{loop.index}}``,
``{{draft}}``, ``{{result.score}}``, ``{{items[-1]}}``, ``{{$loop.item}}``. Strings render as
they are, ``None`` as an empty string, anything else as JSON. A placeholder that does not
resolve is an error naming it, so a typo never reaches a model as literal braces; braces
around anything that is not a reference (``{{ "a": 1 }}``) are left as they are.
"""

from __future__ import annotations

import re

from harness.core.errors import ConfigError
from harness.engine.reference import MISSING, Root, as_text, resolve

_PLACEHOLDER = re.compile(r"\{\{\s*(\$?[A-Za-z_]\w*(?:\.\w+|\[-?\d+\])*)\s*\}\}")


def render(text: str, root: Root) -> str:
    """Replace every placeholder in ``text`` with the value its reference resolves to."""

    def value(match: re.Match[str]) -> str:
        found = resolve(root, match[1])
        if found is MISSING:
            raise ConfigError(f"template placeholder {match[0]!r}: {match[1]!r} is not defined")
        return as_text(found)

    return _PLACEHOLDER.sub(value, text)
