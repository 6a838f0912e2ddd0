"""The comparison operators of exit conditions and what each holds on.

Numbers compare with numbers, and a numeric string is read as a number when the other side is
one; strings order as strings; any other pairing does not hold.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import Any

from harness.engine.reference import MISSING, as_text


class Op(StrEnum):
    """Comparison operators. Spellings with spaces (``not contains``) are accepted too."""

    EQ = "=="
    NE = "!="
    GT = ">"
    GE = ">="
    LT = "<"
    LE = "<="
    CONTAINS = "contains"
    NOT_CONTAINS = "not_contains"
    STARTS_WITH = "starts_with"
    ENDS_WITH = "ends_with"
    IS_EMPTY = "is_empty"
    IS_NOT_EMPTY = "is_not_empty"
    TRUTHY = "truthy"
    FALSY = "falsy"


UNARY = frozenset({Op.IS_EMPTY, Op.IS_NOT_EMPTY, Op.TRUTHY, Op.FALSY})


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _as_number(text: str) -> Any:
    try:
        return float(text)
    except ValueError:
        return MISSING


def _pair(a: Any, b: Any, case_sensitive: bool) -> tuple[Any, Any]:
    """Bring two operands to a comparable form: numeric strings beside numbers, folded case."""
    if isinstance(a, str):
        if isinstance(b, str):
            return (a, b) if case_sensitive else (a.casefold(), b.casefold())
        if _is_number(b):
            return _as_number(a), b
    elif _is_number(a) and isinstance(b, str):
        return a, _as_number(b)
    return a, b


def _equal(a: Any, b: Any, case_sensitive: bool) -> bool:
    a, b = _pair(a, b, case_sensitive)
    return isinstance(a, bool) == isinstance(b, bool) and a == b


def _ordered(compare: Callable[[Any, Any], bool]) -> Callable[[Any, Any, bool], bool]:
    def check(a: Any, b: Any, case_sensitive: bool) -> bool:
        a, b = _pair(a, b, case_sensitive)
        if (_is_number(a) and _is_number(b)) or (isinstance(a, str) and isinstance(b, str)):
            return compare(a, b)
        return False

    return check


def _contains(a: Any, b: Any, case_sensitive: bool) -> bool:
    if isinstance(a, str):
        needle = as_text(b)
        return needle in a if case_sensitive else needle.casefold() in a.casefold()
    if isinstance(a, Mapping | list | tuple | set | frozenset):
        return any(_equal(element, b, case_sensitive) for element in a)
    return False


def _not_contains(a: Any, b: Any, case_sensitive: bool) -> bool:
    if isinstance(a, str | Mapping | list | tuple | set | frozenset):
        return not _contains(a, b, case_sensitive)
    return False


def _affix(method: str) -> Callable[[Any, Any, bool], bool]:
    def check(a: Any, b: Any, case_sensitive: bool) -> bool:
        if not isinstance(a, str):
            return False
        needle = as_text(b)
        if not case_sensitive:
            a, needle = a.casefold(), needle.casefold()
        return bool(getattr(a, method)(needle))

    return check


def _is_empty(a: Any, _b: Any = None, _case_sensitive: bool = True) -> bool:
    if a is None:
        return True
    return isinstance(a, str | Mapping | list | tuple | set | frozenset) and len(a) == 0


COMPARE: dict[Op, Callable[[Any, Any, bool], bool]] = {
    Op.EQ: _equal,
    Op.NE: lambda a, b, cs: not _equal(a, b, cs),
    Op.GT: _ordered(operator.gt),
    Op.GE: _ordered(operator.ge),
    Op.LT: _ordered(operator.lt),
    Op.LE: _ordered(operator.le),
    Op.CONTAINS: _contains,
    Op.NOT_CONTAINS: _not_contains,
    Op.STARTS_WITH: _affix("startswith"),
    Op.ENDS_WITH: _affix("endswith"),
    Op.IS_EMPTY: _is_empty,
    Op.IS_NOT_EMPTY: lambda a, b, cs: not _is_empty(a),
    Op.TRUTHY: lambda a, b, cs: bool(a),
    Op.FALSY: lambda a, b, cs: not a,
}
