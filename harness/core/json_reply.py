"""Finding the JSON object in a model's reply: plain, in a fenced block, or inside prose."""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json)?[ \t]*\n?(.*?)```", re.DOTALL | re.IGNORECASE)


def find_json(text: str) -> Any:
    """The first JSON value the reply holds; ValueError naming what was wrong when there is none."""
    for candidate in (text.strip(), *(m.group(1).strip() for m in _FENCE.finditer(text))):
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            continue
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            data, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict):
            return data
    raise ValueError("no JSON object found in the reply" if text.strip() else "the reply is empty")
