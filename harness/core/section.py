"""The base of every part of a loop's configuration, and errors that name a field.

A section is declared once, beside the class that uses it (the agent's in ``agent/``, the
critic's in ``verify/``, the budget here), with its defaults and bounds; ``loop.toml`` reads it
through :class:`~harness.spec.LoopSpec`, and the Python API builds the same object.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Annotated, Any, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo

from harness.core.errors import ConfigError

SECTION_CONFIG = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
"""Unknown fields are named, nothing changes once made, and every bound is finite."""


class Section(BaseModel):
    """A frozen part of the configuration that refuses unknown fields and infinite bounds."""

    model_config = SECTION_CONFIG


def field_errors(where: str, exc: ValidationError, fields: Mapping[str, FieldInfo]) -> ConfigError:
    """One line per problem, each naming its field under ``where`` and saying the bound it
    declares: ``budget.tokens: must be a positive integer, got 0``."""
    lines = []
    for error in exc.errors():
        loc = error["loc"]
        path = ".".join(str(part) for part in (where, *loc) if part != "")
        info = fields.get(str(loc[0]) if loc else "") if len(loc) <= 1 else None
        rule = bound_rule(info) if info is not None and error["type"] in VALUE_ERRORS else None
        said = f"must be {rule}, got {error['input']!r}" if rule else error["msg"]
        lines.append(f"{path}: {said}")
    return ConfigError("\n".join(lines))


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


T = TypeVar("T")


def named_errors(where: str) -> Callable[[type[T]], type[T]]:
    """A class decorator: building the class directly (the Python API) raises a
    :class:`ConfigError` naming each bad field under ``where``, as loop.toml's errors do."""

    def decorate(cls: type[T]) -> type[T]:
        init = cls.__init__

        @functools.wraps(init)
        def __init__(self: T, *args: Any, **kwargs: Any) -> None:
            try:
                init(self, *args, **kwargs)
            except ValidationError as exc:
                raise field_errors(where, exc, cls.__pydantic_fields__) from None  # type: ignore[attr-defined]

        cls.__init__ = __init__  # type: ignore[method-assign,assignment]
        return cls

    return decorate


@functools.cache
def _adapter(kind: Any) -> tuple[FieldInfo, TypeAdapter[Any]]:
    info = FieldInfo.from_annotation(kind)
    bounded: Any = Annotated[info.annotation, info]
    return info, TypeAdapter(bounded, config=_ADAPTER_CONFIG)


_ADAPTER_CONFIG = ConfigDict(allow_inf_nan=False)


def check_value(kind: Any, value: Any, name: str) -> Any:
    """``value`` as the type ``kind`` takes it (``Annotated[int, Field(ge=1, le=100)]``: its
    bounds, declared there once); a :class:`ConfigError` naming ``name`` when it does not fit.
    A setting whose bound lives below the configuration (the engine's) is a type used both by
    its section's field and by the class that checks a keyword with it."""
    info, adapter = _adapter(kind)
    try:
        return adapter.validate_python(value)
    except ValidationError as exc:
        raise field_errors(name, exc, {"": info}) from None


def check_field(model: type, field: str, value: Any, *, name: str | None = None) -> Any:
    """``value`` as ``model``'s ``field`` takes it (its type and bounds, declared there once); a
    :class:`ConfigError` naming ``name`` (default: the field) when it does not fit. A runtime
    class checks a keyword that mirrors a section's field with it, rather than a copy."""
    info = model.__pydantic_fields__[field]  # type: ignore[attr-defined]
    return check_value(Annotated[info.annotation, info], value, name or field)
