"""The critic's verdict as its model gives it: a ``verdict`` tool call, or a block fenced by a tag.

The artifact the critic judges is untrusted, and a critic may quote it; so the verdict is asked
for in a form the artifact cannot imitate, and nothing else in the reply is read:

* a call of the :data:`VERDICT_TOOL` ``verdict`` tool, whose arguments are the verdict (reasons
  first, then fixes, then the score); or, for a model that answers in text,
* one JSON object between ``<verdict-TAG>`` and ``</verdict-TAG>``, where ``TAG`` is new for each
  request and appears nowhere in what the model was sent (:func:`fresh_tag`), so no text planted in
  the artifact can carry it.

A reply holding more than one verdict (two calls, two blocks, a call and a block) is rejected.
A reply that is nothing but one JSON object, plain or as the only fenced block, is read as the
verdict too (the plain form the critic's contract names); text around it makes it no verdict.
"""

from __future__ import annotations

import json
import re
import secrets
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, Field, ValidationError

from harness.models.base import Reply, ToolSchema

VERDICT_TOOL_NAME = "verdict"

Score = Annotated[float, Field(ge=0, le=10, strict=True, allow_inf_nan=False)]
"""A score as the critic's model must give it: a number (not a string) from 0 to 10."""

FIXES = "One concrete change that would raise the score per item."


class CriticReply(BaseModel):
    """The verdict the critic's model must give; reasons come before the score."""

    reasons: list[str] = Field(
        default_factory=list, description="One finding per item, good or bad, before any score."
    )
    fixes: list[str] = Field(default_factory=list, description=FIXES)
    score: Score = Field(
        description="0 to 10: 10 nothing left to fix, 8 ready with minor nits, 5 substantial "
        "problems, 0 missing or unusable."
    )


class CriterionReply(BaseModel):
    """One criterion's score, its reasons given first."""

    criterion: int = Field(ge=1, strict=True, description="The criterion's number as listed.")
    reasons: list[str] = Field(
        default_factory=list, description="What the artifact does or misses on this criterion."
    )
    score: Score = Field(description="0 to 10 on this criterion.")


class RubricReply(BaseModel):
    """The verdict of a critic that scores each numbered criterion on its own."""

    criteria: list[CriterionReply] = Field(
        description="One entry per numbered criterion, each with its reasons before its score."
    )
    fixes: list[str] = Field(default_factory=list, description=FIXES)


_Schema = TypeVar("_Schema", CriticReply, RubricReply)


def verdict_tool(schema: type[CriticReply] | type[RubricReply] = CriticReply) -> ToolSchema:
    """The ``verdict`` tool whose arguments are a ``schema`` (the reasons come first)."""
    full = schema.model_json_schema()
    properties = {
        name: {key: value for key, value in spec.items() if key != "title"}
        for name, spec in full["properties"].items()
    }
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": list(schema.model_fields),
    }
    if "$defs" in full:
        parameters["$defs"] = full["$defs"]
    return {
        "type": "function",
        "function": {
            "name": VERDICT_TOOL_NAME,
            "description": "Give your verdict on the artifact, once: the reasons first, then "
            "the fixes, then the score.",
            "parameters": parameters,
        },
    }


VERDICT_TOOL: ToolSchema = verdict_tool()
"""The tool the critic's model calls to give its verdict (its arguments are a CriticReply)."""

RUBRIC_TOOL: ToolSchema = verdict_tool(RubricReply)
"""The verdict tool of a critic scoring each criterion (its arguments are a RubricReply)."""

_WHOLE_FENCE = re.compile(r"```(?:json)?[ \t]*\n?(.*?)```", re.DOTALL | re.IGNORECASE)


def fresh_tag(*sent: str) -> str:
    """A new random tag that occurs in none of ``sent`` (everything the model is shown)."""
    while True:
        tag = secrets.token_hex(8)
        if not any(tag in text for text in sent):
            return tag


def fence(tag: str) -> tuple[str, str]:
    """The opening and closing lines of a verdict block for ``tag``."""
    return f"<verdict-{tag}>", f"</verdict-{tag}>"


def parse_reply(reply: Reply, tag: str) -> tuple[CriticReply, str]:
    """The one verdict in ``reply`` and its JSON text; ValueError saying what was wrong.

    ``tag`` is the verdict tag of the request this reply answers.
    """
    return parse_verdict(reply, tag, CriticReply)


def parse_verdict(reply: Reply, tag: str, schema: type[_Schema]) -> tuple[_Schema, str]:
    """:func:`parse_reply` for a verdict of the form ``schema``."""
    found = [call.arguments_json for call in reply.tool_calls if call.name == VERDICT_TOOL_NAME]
    text = reply.content or ""
    found += _fenced(text, tag)
    if not found and not reply.tool_calls:
        whole = _whole_object(text)
        found = [whole] if whole is not None else []
    if len(found) > 1:
        raise ValueError(f"the reply holds {len(found)} verdicts; give exactly one")
    if not found:
        raise ValueError(_missing(reply, text))
    return _validated(found[0], schema), found[0]


def _fenced(text: str, tag: str) -> list[str]:
    """The text of every block opened by this request's tag (an unclosed one is empty)."""
    opening, closing = fence(tag)
    blocks = []
    for part in text.split(opening)[1:]:
        inside, closed, _ = part.partition(closing)
        blocks.append(inside.strip() if closed else "")
    return blocks


def _whole_object(text: str) -> str | None:
    """The reply itself when it is nothing but one JSON object, plain or in one fenced block."""
    body = text.strip()
    fenced = _WHOLE_FENCE.fullmatch(body)
    if fenced:
        body = fenced.group(1).strip()
    try:
        return body if isinstance(json.loads(body), dict) else None
    except json.JSONDecodeError:
        return None


def _missing(reply: Reply, text: str) -> str:
    others = sorted({call.name for call in reply.tool_calls})
    if others:
        return f"no verdict: the reply calls {', '.join(others)}, not the {VERDICT_TOOL_NAME} tool"
    if not text.strip():
        return "the reply is empty"
    return f"no verdict found: call the {VERDICT_TOOL_NAME} tool or use the verdict tags"


def _validated(raw: str, schema: type[_Schema]) -> _Schema:
    try:
        data: Any = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the verdict is not valid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise ValueError(f"the verdict must be a JSON object, got {type(data).__name__}")
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}"
            for error in exc.errors()
        )
        raise ValueError(f"the verdict is not valid: {problems}") from None
