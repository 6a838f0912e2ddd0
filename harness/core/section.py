"""The base of every part of a loop's configuration, and errors that name a field.

A section is declared once, beside the class that uses it (the agent's in ``agent/``, the
critic's in ``verify/``, the budget here), with its defaults and bounds; ``loop.toml`` reads it
through :class:`~harness.spec.LoopSpec`, and the Python API builds the same object.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo

from harness.core.errors import ConfigError
from harness.core.validation import problems

SECTION_CONFIG = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
"""Unknown fields are named, nothing changes once made, and every bound is finite."""


class Section(BaseModel):
    """A frozen part of the configuration that refuses unknown fields and infinite bounds."""

    model_config = SECTION_CONFIG


def field_errors(where: str, exc: ValidationError, fields: Mapping[str, FieldInfo]) -> ConfigError:
    """One line per problem, each naming its field under ``where`` and saying the bound it
    declares: ``budget.tokens: must be a positive integer, got 0`` (``where`` may be "")."""
    lines = []
    for loc, said in problems(exc, fields=fields):
        named = f"{where}{'.' if where and loc[:1].isalpha() else ''}{loc}"
        lines.append(f"{named}: {said}" if named else said)  # a check of the whole names its own
    return ConfigError("\n".join(lines))


T = TypeVar("T")


def named_errors(where: str) -> Callable[[type[T]], type[T]]:
    """A class decorator: building the class directly (the Python API) raises a
    :class:`ConfigError` naming each bad field under ``where``, as loop.toml's errors do."""

    def decorate(cls: type[T]) -> type[T]:
        init, fields = cls.__init__, cls.__pydantic_fields__  # type: ignore[attr-defined]
        positional = dataclasses.is_dataclass(cls)  # a model takes keywords only

        @functools.wraps(init)
        def __init__(self: T, *args: Any, **kwargs: Any) -> None:
            named = dict(zip(fields, args, strict=False)) if positional else {}
            if args and len(named) == len(args) and not named.keys() & kwargs.keys():
                args, kwargs = (), {**named, **kwargs}  # by name, so that an error names it
            try:
                init(self, *args, **kwargs)
            except ValidationError as exc:
                raise field_errors(where, exc, fields) from None

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
    return check_value(_field_type(model, field), value, name or field)


@functools.cache
def _field_type(model: type, field: str) -> Any:
    info = model.__pydantic_fields__[field]  # type: ignore[attr-defined]
    return Annotated[info.annotation, info]
