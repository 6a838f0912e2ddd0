"""Exit conditions of a loop: comparisons on loop state, combined with AND or OR.

``left`` is a reference (:mod:`harness.engine.reference`) whose first part names a root (a
loop variable, ``loop_round``, ``output``, ``history`` ..., as the caller's ``root`` function
decides). In text, a leading ``$`` says the first part *is* a root: :meth:`ConditionSet.check_roots`
refuses one that is not among the caller's roots. A reference that does not resolve is *missing*, and no operator holds on a missing
value: a condition on an output that was not produced counts as not met, whatever the operator.
A bare reference (``"needs_retry"``) is a truth test, ``"not needs_retry"`` its opposite.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator

from harness.core.errors import ConfigError
from harness.core.validation import format_validation_error
from harness.engine.operators import COMPARE, UNARY, Op
from harness.engine.reference import MISSING, Root, lookup, parse_reference, resolve

__all__ = ["MISSING", "Combine", "Condition", "ConditionSet", "Op", "Root", "exit_conditions"]

Combine = Literal["and", "or"]


_WORD_OPS = (
    r"not[ _]+contains|contains|starts[ _]+with|ends[ _]+with|is[ _]+not[ _]+empty|is[ _]+empty"
)
_CONDITION = re.compile(
    rf"\s*(?P<left>[^\s<>=!]+)\s*"
    rf"(?P<op>>=|<=|==|!=|>|<|(?<=\s)(?:{_WORD_OPS})(?=\s|$))\s*(?P<right>.*?)\s*",
    re.IGNORECASE | re.DOTALL,
)
_CONNECTIVE = re.compile(r"""("[^"]*"|'[^']*')|\s+(and|or)\s+""", re.IGNORECASE)
_NEGATION = re.compile(r"\s*not\s+(?P<left>\S.*?)\s*", re.IGNORECASE | re.DOTALL)


class Condition(BaseModel):
    """One comparison, e.g. ``Condition("score", ">=", 8)`` or ``Condition.parse("score >= 8")``.

    Numbers compare with numbers, and a numeric string is read as a number when the other side
    is one (``"9" >= 8`` holds); strings order as strings; any other pairing does not hold.
    ``contains`` looks for a substring in a string, an element in an array, a key in an object.
    ``starts_with``/``ends_with`` apply to strings. ``is_empty`` holds for ``None``, ``""``,
    ``[]`` and ``{}``. ``truthy``/``falsy`` test the value as Python's ``bool`` does (so
    ``"false"`` is truthy); ``Condition.parse("needs_retry")`` is ``truthy``,
    ``"not needs_retry"`` is ``falsy``. With ``case_sensitive=False`` strings compare
    case-folded.
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
        try:
            parse_reference(left)
        except ConfigError as exc:
            raise ValueError(
                f"{exc} (e.g. 'score', 'result.score', 'history[-1].output')"
            ) from None
        return left.removeprefix("$")

    @field_validator("op", mode="before")
    @classmethod
    def _spelling(cls, op: Any) -> Any:
        return "_".join(op.lower().split()) if isinstance(op, str) else op

    @field_validator("right")
    @classmethod
    def _operand(cls, right: Any, info: ValidationInfo) -> Any:
        op = info.data.get("op")
        if op in UNARY and right is not None:
            raise ValueError(f"'{op}' takes no right-hand value, got {right!r}")
        if op not in UNARY | {Op.EQ, Op.NE, None} and right is None:
            raise ValueError(f"'{op}' needs a right-hand value")
        return right

    @classmethod
    def parse(cls, text: str, *, case_sensitive: bool = True) -> Condition:
        """Read ``"<reference> <op> [value]"`` or a bare ``"[not] <reference>"``.

        The value is JSON when it parses, else plain text.
        """
        return cls._read(text, case_sensitive)[0]

    @classmethod
    def _read(cls, text: str, case_sensitive: bool = True) -> tuple[Condition, str]:
        """The condition in ``text`` and its reference as written (a leading ``$`` kept)."""
        if not isinstance(text, str) or not text.strip():
            raise ConfigError(f"condition {text!r}: empty; give e.g. 'score >= 8' or 'needs_retry'")
        if _joins(text):
            raise ConfigError(
                f"condition {text!r} joins several conditions; quote a value that holds "
                "'and'/'or', or pass the text as until=/while_= (or to ConditionSet.parse)"
            )
        match = _CONDITION.fullmatch(text)
        if match is None:
            return cls._bare(text, case_sensitive)
        right = match["right"]
        condition = cls(
            match["left"],
            match["op"],
            _literal(right) if right else None,
            case_sensitive=case_sensitive,
        )
        return condition, match["left"]

    @classmethod
    def _bare(cls, text: str, case_sensitive: bool) -> tuple[Condition, str]:
        """``"needs_retry"`` (truthy) or ``"not needs_retry"`` (falsy); else a clear error."""
        negated = _NEGATION.fullmatch(text)
        reference = (negated["left"] if negated else text).strip()
        if any(char.isspace() for char in reference):
            raise ConfigError(
                f"condition {text!r}: expected '<reference> <operator> <value>' "
                "(e.g. 'score >= 8') or a bare reference (e.g. 'needs_retry')"
            )
        try:
            parse_reference(reference)
        except ConfigError as exc:
            raise ConfigError(f"condition {text!r}: {exc}") from None
        op = Op.FALSY if negated else Op.TRUTHY
        return cls(reference, op, case_sensitive=case_sensitive), reference

    def holds(self, root: Root) -> bool:
        """Whether the comparison holds; never on a missing value."""
        value = resolve(root, self.left)
        if value is MISSING:
            return False
        return COMPARE[self.op](value, self.right, self.case_sensitive)

    def __str__(self) -> str:
        if self.op is Op.TRUTHY:
            return self.left
        if self.op is Op.FALSY:
            return f"not {self.left}"
        if self.op in UNARY:
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
    """Conditions joined by AND (all hold) or OR (any holds).

    ``rooted`` holds the references that were written with a leading ``$`` (``$memory.x``):
    each must name a root of the loop, which :meth:`check_roots` enforces.
    """

    conditions: tuple[Condition, ...]
    combine: Combine = "and"
    rooted: tuple[str, ...] = ()
    _checks: tuple[_Check, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # each condition's reference parsed and comparison looked up once, not at every check
        checks = tuple(
            (parse_reference(c.left), COMPARE[c.op], c.right, c.case_sensitive)
            for c in self.conditions
        )
        object.__setattr__(self, "_checks", checks)

    def holds(self, root: Root) -> bool:
        """Whether the conditions hold as :meth:`Condition.holds` says (never on a missing
        value), joined by ``combine``."""
        # checked before and after every round: plain loops, no generator made each time
        if self.combine == "or":
            for path, compare, right, case_sensitive in self._checks:
                value = lookup(root, path)
                if value is not MISSING and compare(value, right, case_sensitive):
                    return True
            return False
        for path, compare, right, case_sensitive in self._checks:
            value = lookup(root, path)
            if value is MISSING or not compare(value, right, case_sensitive):
                return False
        return True

    def __str__(self) -> str:
        return f" {self.combine} ".join(map(str, self.conditions))

    def check_roots(self, roots: Iterable[str], field: str) -> None:
        """Refuse a ``$``-reference whose root is not one of ``roots``, naming both.

        Without ``$`` a name that is no root may still be read from the round's output, so
        only ``$name`` can be known to be wrong before the loop runs.
        """
        known = tuple(roots)
        for reference in self.rooted:
            name = parse_reference(reference)[0]
            if name not in known:
                raise ConfigError(
                    f"{field}: reference {reference!r} names an unknown root {name!r}; "
                    f"the known roots are {', '.join(known)} (declare {name!r} as a loop "
                    "variable, or drop the '$' to read a field of the round's output)"
                )

    @classmethod
    def build(
        cls, spec: Condition | str | Iterable[Condition | str] | None, combine: str, field: str
    ) -> ConditionSet | None:
        """From a Condition, a string (``"a >= 1 and b == 2"``) or a list of either."""
        _check_combine(combine)
        if spec is None:
            return None
        if isinstance(spec, str):
            return cls.parse(spec, field)
        items = [spec] if isinstance(spec, Condition) else list(spec)
        if not items:
            raise ConfigError(f"{field}: give at least one condition, or None")
        read = [_one(item, field) for item in items]
        return cls._of(read, "or" if combine == "or" else "and")

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
        return cls._of([_one(part, field) for part in parts], combine)

    @classmethod
    def _of(cls, read: list[tuple[Condition, str]], combine: Combine) -> ConditionSet:
        rooted = tuple(written for _, written in read if written.startswith("$"))
        return cls(tuple(condition for condition, _ in read), combine, rooted)


def _joins(text: str) -> list[re.Match[str]]:
    """The ``and``/``or`` connectives of ``text`` that stand outside quotes."""
    return [match for match in _CONNECTIVE.finditer(text) if match[2]]


def _one(item: Condition | str, field: str) -> tuple[Condition, str]:
    """The condition ``item`` gives and its reference as written."""
    if isinstance(item, Condition):
        return item, item.left
    if isinstance(item, str):
        return Condition._read(item)
    raise ConfigError(f"{field}: expected a Condition or a string, got {type(item).__name__}")


_Check = tuple[tuple[str, ...], Callable[[Any, Any, bool], bool], Any, bool]
"""A condition ready to check: its reference's parts, its comparison, its value, its case."""

ConditionSpec = Condition | str | Iterable[Condition | str] | None
"""What ``until=``/``while_=`` accept: a Condition, text, a list of either, or None."""

DONE = Condition("output.done", "==", True)
"""The stop condition of a loop given none: the round's output has ``done == true``."""


def exit_conditions(
    until: ConditionSpec, while_: ConditionSpec, combine: str
) -> tuple[ConditionSet | None, ConditionSet | None]:
    """A loop's ``until`` and ``while_``: with neither given, ``until`` is :data:`DONE`.

    An empty (or blank) string means "no condition": the loop runs until the cap (or a
    validator, an exit), and the default is not applied.
    """
    if until is None and while_ is None:
        _check_combine(combine)
        return ConditionSet((DONE,)), None
    return (
        None if _blank(until) else ConditionSet.build(until, combine, "until"),
        None if _blank(while_) else ConditionSet.build(while_, combine, "while_"),
    )


def _check_combine(combine: str) -> None:
    if combine not in ("and", "or"):
        raise ConfigError(f"combine: must be 'and' or 'or', got {combine!r}")


def _blank(spec: ConditionSpec) -> bool:
    return isinstance(spec, str) and not spec.strip()
