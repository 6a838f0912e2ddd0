"""Exit conditions of a loop: comparisons on loop state, combined with AND or OR.

``left`` is a dotted path whose first part names a root (a loop variable, ``loop_round``, or
a body output, as the caller's ``root`` function decides) and whose later parts step into
mappings (by key), sequences (by index) and objects (by public attribute). A path that does
not resolve is *missing*, and no operator holds on a missing value: a condition on an
output that was not produced counts as not met, whatever the operator.
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator

from harness.core.errors import ConfigError
from harness.core.validation import format_validation_error

Root = Callable[[str], Any]
"""Resolves the first part of a path; returns :data:`MISSING` for an unknown name."""

Combine = Literal["and", "or"]


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""A path that does not resolve: no output this round, an absent key, an index out of range."""


def lookup(root: Root, path: Sequence[str]) -> Any:
    """Follow ``path`` from ``root(path[0])``; :data:`MISSING` as soon as a step fails."""
    value = root(path[0])
    for part in path[1:]:
        if value is MISSING:
            return MISSING
        value = step(value, part)
    return value


def step(value: Any, part: str) -> Any:
    """One step of a path into ``value``; :data:`MISSING` if there is nothing there."""
    if isinstance(value, Mapping):
        return value.get(part, MISSING)
    if value is None or isinstance(value, str | bytes | int | float):
        return MISSING
    if isinstance(value, Sequence):
        try:
            return value[int(part)]
        except IndexError:
            return MISSING
        except ValueError:
            pass  # not an index: a named tuple's fields are read as attributes below
    found = MISSING if part.startswith("_") else getattr(value, part, MISSING)
    return MISSING if callable(found) else found


def as_text(value: Any) -> str:
    """How a value reads as text: strings as they are, ``None`` empty, anything else as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, default=str)


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


_UNARY = frozenset({Op.IS_EMPTY, Op.IS_NOT_EMPTY})
_WORD_OPS = (
    r"not[ _]+contains|contains|starts[ _]+with|ends[ _]+with|is[ _]+not[ _]+empty|is[ _]+empty"
)
_CONDITION = re.compile(
    rf"\s*(?P<left>[A-Za-z_][\w.]*)\s*"
    rf"(?P<op>>=|<=|==|!=|>|<|(?<=\s)(?:{_WORD_OPS})(?=\s|$))\s*(?P<right>.*?)\s*",
    re.IGNORECASE | re.DOTALL,
)
_CONNECTIVE = re.compile(r"""("[^"]*"|'[^']*')|\s+(and|or)\s+""", re.IGNORECASE)


class Condition(BaseModel):
    """One comparison, e.g. ``Condition("score", ">=", 8)`` or ``Condition.parse("score >= 8")``.

    Numbers compare with numbers, and a numeric string is read as a number when the other side
    is one (``"9" >= 8`` holds); strings order as strings; any other pairing does not hold.
    ``contains`` looks for a substring in a string, an element in an array, a key in an object.
    ``starts_with``/``ends_with`` apply to strings. ``is_empty`` holds for ``None``, ``""``,
    ``[]`` and ``{}``. With ``case_sensitive=False`` strings compare case-folded.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)

    left: str
    op: Op
    right: Any = None
    case_sensitive: bool = True

    def __init__(
        self, left: str, op: Op | str, right: Any = None, *, case_sensitive: bool = True
    ) -> None:
        try:
            super().__init__(left=left, op=op, right=right, case_sensitive=case_sensitive)
        except ValidationError as exc:
            raise ConfigError(format_validation_error("Condition", exc)) from None

    @field_validator("left")
    @classmethod
    def _path(cls, left: str) -> str:
        if not left or not all(left.split(".")):
            raise ValueError(f"a dotted path like 'score' or 'result.score', got {left!r}")
        return left

    @field_validator("op", mode="before")
    @classmethod
    def _spelling(cls, op: Any) -> Any:
        return "_".join(op.lower().split()) if isinstance(op, str) else op

    @field_validator("right")
    @classmethod
    def _operand(cls, right: Any, info: ValidationInfo) -> Any:
        op = info.data.get("op")
        if op in _UNARY and right is not None:
            raise ValueError(f"'{op}' takes no right-hand value, got {right!r}")
        if op not in _UNARY | {Op.EQ, Op.NE, None} and right is None:
            raise ValueError(f"'{op}' needs a right-hand value")
        return right

    @classmethod
    def parse(cls, text: str, *, case_sensitive: bool = True) -> Condition:
        """Read ``"<path> <op> [value]"``; the value is JSON when it parses, else plain text."""
        if _joins(text):
            raise ConfigError(
                f"condition {text!r} joins several conditions; quote a value that holds "
                "'and'/'or', or pass the text as until=/while_= (or to ConditionSet.parse)"
            )
        match = _CONDITION.fullmatch(text)
        if match is None:
            raise ConfigError(
                f"condition {text!r}: expected '<path> <operator> <value>', e.g. 'score >= 8'"
            )
        right = match["right"]
        return cls(
            match["left"],
            match["op"],
            _literal(right) if right else None,
            case_sensitive=case_sensitive,
        )

    def holds(self, root: Root) -> bool:
        """Whether the comparison holds; never on a missing value."""
        value = lookup(root, self.left.split("."))
        if value is MISSING:
            return False
        return _COMPARE[self.op](value, self.right, self.case_sensitive)

    def __str__(self) -> str:
        if self.op in _UNARY:
            return f"{self.left} {self.op}"
        return f"{self.left} {self.op} {json.dumps(self.right, ensure_ascii=False, default=str)}"


def _literal(text: str) -> Any:
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        return json.loads(text)
    except ValueError:
        pass
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1]
    return text


@dataclass(frozen=True, slots=True)
class ConditionSet:
    """Conditions joined by AND (all hold) or OR (any holds)."""

    conditions: tuple[Condition, ...]
    combine: Combine = "and"

    def holds(self, root: Root) -> bool:
        test = any if self.combine == "or" else all
        return test(condition.holds(root) for condition in self.conditions)

    def __str__(self) -> str:
        return f" {self.combine} ".join(map(str, self.conditions))

    @classmethod
    def build(
        cls, spec: Condition | str | Iterable[Condition | str] | None, combine: str, field: str
    ) -> ConditionSet | None:
        """From a Condition, a string (``"a >= 1 and b == 2"``) or a list of either."""
        if combine not in ("and", "or"):
            raise ConfigError(f"combine: must be 'and' or 'or', got {combine!r}")
        if spec is None:
            return None
        if isinstance(spec, str):
            return cls.parse(spec, field)
        items = [spec] if isinstance(spec, Condition) else list(spec)
        if not items:
            raise ConfigError(f"{field}: give at least one condition, or None")
        conditions = tuple(_one(item, field) for item in items)
        return cls(conditions, "or" if combine == "or" else "and")

    @classmethod
    def parse(cls, text: str, field: str = "condition") -> ConditionSet:
        """Split on ``and``/``or`` outside quotes; mixing the two is refused as ambiguous."""
        splits = _joins(text)
        bounds = [0, *(edge for match in splits for edge in match.span()), len(text)]
        parts = [text[bounds[i] : bounds[i + 1]] for i in range(0, len(bounds), 2)]
        joins = {match[2].lower() for match in splits}
        if len(joins) > 1:
            raise ConfigError(
                f"{field}: {text!r} mixes 'and' with 'or'; pass a list of conditions and combine="
            )
        combine: Combine = "or" if "or" in joins else "and"
        return cls(tuple(_one(part, field) for part in parts), combine)


def _joins(text: str) -> list[re.Match[str]]:
    """The ``and``/``or`` connectives of ``text`` that stand outside quotes."""
    return [match for match in _CONNECTIVE.finditer(text) if match[2]]


def _one(item: Condition | str, field: str) -> Condition:
    if isinstance(item, Condition):
        return item
    if isinstance(item, str):
        return Condition.parse(item)
    raise ConfigError(f"{field}: expected a Condition or a string, got {type(item).__name__}")


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


_COMPARE: dict[Op, Callable[[Any, Any, bool], bool]] = {
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
}
