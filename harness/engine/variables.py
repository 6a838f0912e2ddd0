"""Typed loop variables: their declaration (:class:`Variable`) and the checked view a body sees.

A variable is a ``string``, ``number``, ``bool``, ``object`` or ``array``; assigning a value of
another type, or to a name never declared, raises :class:`ConfigError` naming the variable.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from harness.core.errors import ConfigError

RESERVED_NAMES = frozenset({"loop_round", "loop"})

VarType = Literal["string", "number", "bool", "object", "array"]

_EMPTY: dict[str, Any] = {"string": "", "number": 0, "bool": False, "object": {}, "array": []}


def _conforms(kind: str, value: Any) -> bool:
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    expected = {"string": str, "bool": bool, "object": Mapping, "array": list | tuple}[kind]
    return isinstance(value, expected)


@dataclass(frozen=True, slots=True)
class Variable:
    """A typed loop variable, e.g. ``Variable("score", "number", 0)``.

    Names are identifiers other than ``loop_round`` and ``loop``. Without a value (or with
    ``None``) a variable starts at its type's empty value: ``""``, ``0``, ``False``, ``{}``, ``[]``.
    """

    name: str
    type: VarType
    value: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ConfigError(f"Variable.name: must be a non-empty identifier, got {self.name!r}")
        if self.name in RESERVED_NAMES:
            raise ConfigError(f"Variable.name: {self.name!r} is reserved by the loop engine")
        if self.type not in _EMPTY:
            raise ConfigError(
                f"Variable.type of {self.name!r}: one of {list(_EMPTY)}, got {self.type!r}"
            )
        if self.value is None:
            object.__setattr__(self, "value", copy.copy(_EMPTY[self.type]))
        elif not _conforms(self.type, self.value):
            raise ConfigError(
                f"Variable.value of {self.name!r}: {self.value!r} is not a {self.type}"
            )


def declare_variables(
    variables: Mapping[str, Any] | Iterable[Variable] | None,
) -> dict[str, Variable]:
    """The declared variables by name: from initial values (types inferred) or a list of them."""
    if variables is None:
        return {}
    if isinstance(variables, Mapping):
        variables = [_inferred(name, value) for name, value in variables.items()]
    declared = {}
    for variable in variables:
        if not isinstance(variable, Variable):
            raise ConfigError(f"variables: expected Variable items, got {variable!r}")
        if variable.name in declared:
            raise ConfigError(f"variables: duplicate name {variable.name!r}")
        declared[variable.name] = variable
    return declared


def _inferred(name: str, value: Any) -> Variable:
    """The variable ``name`` starting at ``value``, of the first type ``value`` fits."""
    kinds = ("bool", "number", "string", "object", "array")
    kind = next((kind for kind in kinds if _conforms(kind, value)), None)
    if kind is None:
        raise ConfigError(
            f"variables.{name}: cannot tell the type of {value!r}; "
            "declare it as Variable(name, type, value)"
        )
    return Variable(name, kind, value)  # type: ignore[arg-type]


_IMMUTABLE = (str, int, float)
"""Values a snapshot keeps as they are (a tuple: ``isinstance`` reads it faster than a union)."""


class Vars:
    """Loop variables as the body sees them: ``ctx.vars.score`` or ``ctx.vars["score"]``.

    Assignment is checked: an undeclared name or a value of the wrong type raises
    :class:`ConfigError` naming the variable.
    """

    __slots__ = ("_types", "_values")

    def __init__(self, types: Mapping[str, str], values: dict[str, Any]) -> None:
        object.__setattr__(self, "_types", types)
        object.__setattr__(self, "_values", values)

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"no loop variable {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __setitem__(self, name: str, value: Any) -> None:
        kind = self._types.get(name)
        if kind is None:
            raise ConfigError(
                f"no loop variable {name!r} to assign (declared: {sorted(self._types)})"
            )
        if not _conforms(kind, value):
            raise ConfigError(
                f"loop variable {name!r} is a {kind}; cannot assign {type(value).__name__} {value!r}"
            )
        self._values[name] = value

    def __contains__(self, name: object) -> bool:
        return name in self._values

    def __repr__(self) -> str:
        return f"Vars({self._values!r})"

    def view(self) -> Mapping[str, Any]:
        """A read-only view of the current values (for conditions reading ``vars.x``)."""
        return MappingProxyType(self._values)

    def snapshot(self) -> dict[str, Any]:
        """A copy that later assignments or in-place edits cannot change."""
        if not self._values:  # taken after every round: a loop without variables pays nothing
            return {}
        return {
            name: value if isinstance(value, _IMMUTABLE) else copy.deepcopy(value)
            for name, value in self._values.items()
        }


NO_VARS = Vars({}, {})
"""The variables of a loop or ForEach that declares none: shared, since none can be assigned."""
