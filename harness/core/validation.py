"""pydantic validation errors as messages that name the field, and the check of a float bound."""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path
from typing import Any, get_args

from pydantic import ValidationError
from pydantic.fields import FieldInfo

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
    fields: Mapping[str, FieldInfo] | None = None,
) -> str:
    """One line per problem: ``loop.toml: field 'budget.tokens': must be a positive integer``.

    ``union_tags`` maps a list of tagged unions (``gates``) to its tags, which pydantic puts in
    the location (gates.0.pytest.timeout) though they are not fields; ``fields`` are the model's
    own, whose declared bounds a problem with one of them is said in (:func:`problems`).
    """
    lines: list[str] = []
    for location, message in problems(exc, union_tags=union_tags, fields=fields):
        if location:
            lines.append(f"{source}: field '{location}': {message}")
        else:  # a model's own check names its fields
            lines.extend(f"{source}: {line}" for line in message.splitlines())
    return "\n".join(lines)


def problems(
    exc: ValidationError,
    *,
    union_tags: Mapping[str, Collection[str]] | None = None,
    fields: Mapping[str, FieldInfo] | None = None,
) -> list[tuple[str, str]]:
    """Each problem of ``exc`` as (location, what is wrong): the location dotted (``budget.tokens``,
    ``gates[0].timeout``; "" for a model's own check, whose message names its fields); a number
    outside the bounds one of ``fields`` declares said with them (``must be an integer from 1 to
    100, got 0``), an unknown field and a missing one in those words, a choice not among a
    field's named ones with the value given."""
    tags = union_tags or {}
    found: list[tuple[str, str]] = []
    for error in exc.errors():
        loc = error["loc"]
        parts = [p for i, p in enumerate(loc)
                 if not (i > 1 and isinstance(loc[i - 1], int) and p in tags.get(str(loc[i - 2]), ()))]  # fmt: skip
        if not parts and error["type"] == "value_error":
            found.append(("", str(error["ctx"]["error"])))
            continue
        location = ".".join(f"[{p}]" if isinstance(p, int) else p for p in parts)
        location = location.replace(".[", "[")
        info = _field_at(fields or {}, parts)
        rule = bound_rule(info) if info is not None and error["type"] in VALUE_ERRORS else None
        message = error["msg"]
        if rule:
            message = f"must be {rule}, got {error['input']!r}"
        elif error["type"] == "extra_forbidden":
            message = "unknown field"
        elif error["type"] == "missing":
            message = "required field is missing"
        elif error["type"] == "literal_error":
            message = f"{message}, got {error['input']!r}"
        found.append((location, message))
    return found


def _field_at(fields: Mapping[str, FieldInfo], parts: list[str | int]) -> FieldInfo | None:
    """The field at ``parts`` among ``fields`` and the sections they hold (``budget.tokens``);
    ``fields[""]`` for no parts. None past a list or a union, which name no one field."""
    info = fields.get("")
    for part in parts:
        info = fields.get(part) if isinstance(part, str) else None
        if info is None:
            return None
        fields = getattr(info.annotation, "__pydantic_fields__", {})
    return info


VALUE_ERRORS = frozenset({
    "greater_than", "greater_than_equal", "less_than", "less_than_equal", "finite_number",
    "int_type", "int_from_float", "int_parsing", "float_type", "float_parsing", "bool_type",
})  # fmt: skip
"""What pydantic says of a number outside its declared bounds, or not a number at all."""


def bound_rule(info: FieldInfo) -> str | None:
    """The bounds a numeric field declares, said in words (None: it declares none)."""
    bounds = {key: getattr(m, key) for m in info.metadata for key in ("gt", "ge", "lt", "le")
              if getattr(m, key, None) is not None}  # fmt: skip
    if not bounds:
        return None
    integer = float not in get_args(info.annotation) and info.annotation is not float
    low, high = bounds.get("ge", bounds.get("gt")), bounds.get("le", bounds.get("lt"))
    if high is None and (bounds.get("gt") == 0 or (integer and bounds.get("ge") == 1)):
        return "a positive integer" if integer else "a finite number above 0"
    if "ge" in bounds and "le" in bounds:
        return f"an integer from {low} to {high}" if integer else f"between {low:g} and {high:g}"
    words = [f"above {low:g}" if "gt" in bounds else f"at least {low:g}"] if low is not None else []
    if high is not None:
        words.append(f"below {high:g}" if "lt" in bounds else f"at most {high:g}")
    return f"{'an integer' if integer else 'a finite number'} {' and '.join(words)}"


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


def json_lines(path: Path, text: str) -> Iterator[tuple[str, Any]]:
    """``(where, value)`` for each non-blank line of ``text``, the JSON Lines of a file the user
    gave: ``where`` is ``path:line``, and a line that is not JSON is a :class:`ConfigError`
    naming it."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{where}: not valid JSON: {exc.msg}") from None
        except RecursionError:
            raise ConfigError(f"{where}: nested too deeply to read") from None
        yield where, value
