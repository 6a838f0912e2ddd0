"""pydantic validation errors as messages that name the field, and the check of a float bound."""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping
from pathlib import Path

from pydantic import ValidationError

from harness.core.errors import ConfigError


def validation_message(error: ValidationError) -> str:
    """The first problem of a pydantic error, as ``field: message``."""
    first = error.errors()[0]
    loc = ".".join(str(part) for part in first["loc"])
    return f"{loc}: {first['msg']}" if loc else str(first["msg"])


def format_validation_error(
    source: object,
    exc: ValidationError,
    *,
    union_tags: Mapping[str, Collection[str]] | None = None,
) -> str:
    """One line per problem: ``loop.toml: field 'budget.tokens': Input should be greater than 0``.

    ``union_tags`` maps a list of tagged unions (``gates``) to its tags, which pydantic puts in
    the location (gates.0.pytest.timeout) though they are not fields.
    """
    tags = union_tags or {}
    lines: list[str] = []
    for error in exc.errors():
        loc = error["loc"]
        parts = [p for i, p in enumerate(loc)
                 if not (i > 1 and isinstance(loc[i - 1], int) and p in tags.get(str(loc[i - 2]), ()))]  # fmt: skip
        if not parts and error["type"] == "value_error":  # a model's own check names its fields
            lines.extend(f"{source}: {line}" for line in str(error["ctx"]["error"]).splitlines())
            continue
        location = ".".join(_location_part(p) for p in parts) or "(top level)"
        location = re.sub(r"\.\[", "[", location)
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = "unknown field"
        elif error["type"] == "missing":
            message = "required field is missing"
        lines.append(f"{source}: field '{location}': {message}")
    return "\n".join(lines)


def _location_part(part: str | int) -> str:
    return f"[{part}]" if isinstance(part, int) else str(part)


def positive_finite(field: str, value: object) -> float:
    """``value`` when it is a finite number above 0 (not a bool, not ``inf`` or ``nan``); else a
    ConfigError naming ``field``. Every bound that is a float (seconds, USD, a rate) goes through
    it, so ``inf`` never reaches arithmetic that overflows."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise ConfigError(f"{field}: must be a finite number above 0, got {value!r}")
    return float(value)


def read_utf8(path: Path, what: str) -> str:
    """The text of ``path``, a file the user gave; one that cannot be read, or is not UTF-8, is a
    :class:`ConfigError` naming the file (``what`` says what it should hold)."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read {what}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: not UTF-8 text (byte {exc.start} is {exc.object[exc.start]:#04x}); "
            "save it as UTF-8"
        ) from None
