"""SKILL.md: the project knowledge every round reads (success, rules, prohibitions, hints).

A skill file is Markdown with optional front matter::

    ---
    name: bugfix
    description: Fix a failing test without touching the tests.
    threshold: 8
    rules:
      - Reproduce the failure first.
    ---
    # Bug fix
    ## Success
    The test command exits 0.
    ## Don't
    - edit tests

Each rubric item is also a :class:`Criterion` a critic panel scores on its own
(:attr:`Skill.criteria`): ``must:`` in front makes it must-pass, ``(weight N)`` at its end
weighs it (default 1)::

    ## Critic rubric
    - must: Every claim cites a source.
    - Reads clearly. (weight 2)

Headings are matched case-insensitively with synonyms (``Success criteria``, ``Definition of
done``, ``Don't``, ``Never``, ``Tips`` ...). Sections the harness does not know are kept
verbatim, in order, and shown to the agent. Unknown front-matter keys land in :attr:`Skill.meta`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.core.validation import validation_message
from harness.memory.sections import (
    Line,
    block_text,
    bullet_items,
    document_lines,
    hanging,
    heading_key,
    located,
    read_markdown,
    split_sections,
)
from harness.memory.text_fields import Section

_SYNONYMS: dict[str, tuple[str, ...]] = {
    "name": ("name", "title"),
    "description": ("description", "summary", "about", "purpose"),
    "success": (
        "success",
        "success criteria",
        "definition of success",
        "definition of done",
        "done when",
        "acceptance criteria",
        "성공의 정의",
        "성공 기준",
    ),
    "rules": ("rules", "rule", "constraints", "guidelines", "규칙"),
    "prohibitions": (
        "prohibitions",
        "prohibited",
        "forbidden",
        "don't",
        "dont",
        "don'ts",
        "do not",
        "never",
        "금지 사항",
        "금지사항",
        "금지",
    ),
    "hints": ("hints", "hint", "tips", "advice", "힌트"),
    "rubric": ("critic rubric", "rubric", "review criteria", "critic", "grading"),
    "threshold": ("threshold", "pass threshold", "passing score"),
}
_FIELD_OF = {synonym: name for name, synonyms in _SYNONYMS.items() for synonym in synonyms}
_LISTS = ("rules", "prohibitions", "hints", "rubric")

_MUST = re.compile(r"^must(?:[ -]pass)?\s*:\s*", re.IGNORECASE)
_WEIGHT = re.compile(r"\s*\(weight\s*:?\s*([0-9]*\.?[0-9]+)\s*\)\s*$", re.IGNORECASE)
_KEY = re.compile(r"^([A-Za-z_][\w' -]*?)\s*:\s*(.*)$")
_ITEM = re.compile(r"^\s*-\s+(.*)$")
_TITLE = re.compile(r"^#(?!#)\s*(.*?)\s*$")

MetaValue = str | list[str]


class Criterion(BaseModel):
    """One rubric item as a critic panel scores it: must-pass or weighed with the rest."""

    model_config = ConfigDict(frozen=True)

    text: str = Field(min_length=1)
    must_pass: bool = False
    weight: float = Field(1.0, gt=0, le=100, allow_inf_nan=False)

    @classmethod
    def parse(cls, item: str) -> Criterion:
        """``must: text (weight 2)`` -> must-pass, weight 2; a plain item: weight 1."""
        must = _MUST.match(item)
        text = item[must.end() :] if must else item
        weight = _WEIGHT.search(text)
        if weight:
            text = text[: weight.start()]
        return cls(
            text=text.strip(),
            must_pass=must is not None,
            weight=float(weight.group(1)) if weight else 1.0,
        )


class Skill(BaseModel):
    """A parsed SKILL.md. Build it with :meth:`load` or :meth:`parse`."""

    model_config = ConfigDict(frozen=True)

    name: str = ""
    description: str = ""
    success: str = ""
    rules: tuple[str, ...] = ()
    prohibitions: tuple[str, ...] = ()
    hints: tuple[str, ...] = ()
    rubric: tuple[str, ...] = ()
    threshold: float | None = Field(default=None, ge=0, le=10, allow_inf_nan=False)
    extra: tuple[Section, ...] = ()
    meta: dict[str, MetaValue] = Field(default_factory=dict)
    source: Path | None = None

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Skill:
        """Read and parse a SKILL.md; :class:`ConfigError` names the file and line on failure."""
        return cls.parse(read_markdown(path, "skill file"), source=Path(path))

    @classmethod
    def parse(cls, text: str, *, source: str | os.PathLike[str] | None = None) -> Skill:
        """Parse SKILL.md text; ``source`` names it in errors and supplies a default name."""
        where = source if source is not None else "<skill>"
        lines = document_lines(text, where, "skill file")
        draft = _Draft()
        if lines[0].text.strip() == "---":
            front, lines = _split_front_matter(lines, where)
            for key, value, line in _parse_front_matter(front, where):
                draft.absorb_value(key, value, line, where)
        draft.absorb_body(lines, where)
        draft.text.setdefault("name", _default_name(source))
        try:
            skill = cls.model_validate(
                {
                    **draft.text,
                    **draft.lists,
                    "threshold": draft.threshold,
                    "extra": draft.extra,
                    "meta": draft.meta,
                    "source": source,
                }
            )
        except ValidationError as exc:
            raise located(where, None, validation_message(exc)) from exc
        skill.criteria  # noqa: B018 - a rubric item no critic could score is named now
        return skill

    @property
    def criteria(self) -> tuple[Criterion, ...]:
        """The rubric's items as criteria (must-pass, weights); none without a rubric."""
        try:
            return tuple(Criterion.parse(item) for item in self.rubric)
        except ValidationError as exc:
            where = self.source or "<skill>"
            raise located(where, None, f"rubric: {validation_message(exc)}") from exc

    def render_for_agent(self) -> str:
        """Everything the author needs, as Markdown: success, rules, prohibitions, hints, rest."""
        parts = [f"# Skill: {self.name}", self.description]
        parts += self._criteria_parts()
        parts.append(_list_section("Hints", self.hints))
        parts += [section.render() for section in self.extra]
        return _join(parts)

    def render_for_critic(self) -> str:
        """What a reviewer scores against: success criteria, rubric and rules (no hints)."""
        return _join([f"# Criteria: {self.name}", *self._criteria_parts()])

    def _criteria_parts(self) -> list[str]:
        rubric = _list_section("Critic rubric", self.rubric)
        if self.threshold is not None:
            scale = f"A reviewer scores the result from 0 to 10; it passes at {self.threshold:g}."
            rubric = f"{rubric}\n\n{scale}" if rubric else f"## Critic rubric\n\n{scale}"
        return [
            f"## Success criteria\n\n{self.success}" if self.success else "",
            rubric,
            _list_section("Rules", self.rules),
            _list_section("Prohibitions", self.prohibitions),
        ]


def _split_front_matter(lines: list[Line], where: object) -> tuple[list[Line], list[Line]]:
    for i, line in enumerate(lines[1:], start=1):
        if line.text.strip() in ("---", "..."):
            return lines[1:i], lines[i + 1 :]
    raise located(where, lines[0].number, "front matter opened with '---' is never closed")


def _parse_front_matter(lines: list[Line], where: object) -> list[tuple[str, MetaValue, int]]:
    """``key: value`` lines and ``key:`` followed by ``- item`` lines; nothing fancier."""
    entries: list[tuple[str, MetaValue, int]] = []
    for line in lines:
        stripped = line.text.strip()
        if not stripped or stripped.startswith("#"):
            continue
        item = _ITEM.match(line.text)
        if item and entries and isinstance(entries[-1][1], list):
            entries[-1][1].append(_unquote(item.group(1)))
            continue
        key = _KEY.match(line.text)
        if not key or line.text[0].isspace():
            raise located(
                where, line.number, f"expected 'key: value' or '- item', got {stripped!r}"
            )
        value = key.group(2).strip()
        if value.startswith("[") and value.endswith("]"):
            parsed: MetaValue = [_unquote(v) for v in value[1:-1].split(",") if v.strip()]
        elif value in ("|", ">"):
            raise located(where, line.number, "block scalars are not supported; use a section")
        else:
            parsed = _unquote(value) if value else []
        entries.append((key.group(1).strip(), parsed, line.number))
    return entries


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


@dataclass
class _Draft:
    """Fields gathered from front matter, then from sections (which add to them)."""

    text: dict[str, str] = field(default_factory=dict)
    lists: dict[str, list[str]] = field(default_factory=lambda: {name: [] for name in _LISTS})
    threshold: float | None = None
    meta: dict[str, MetaValue] = field(default_factory=dict)
    extra: list[Section] = field(default_factory=list)

    def absorb_value(self, key: str, value: MetaValue, line: int, where: object) -> None:
        """One front-matter key, or a scalar section, into its field (or :attr:`meta`)."""
        name = _FIELD_OF.get(heading_key(key))
        if name is None:
            self.meta[key] = value
        elif name in _LISTS:
            self.lists[name] += [value] if isinstance(value, str) else value
        elif name == "success" and isinstance(value, list):
            self.add_text(name, "\n".join(f"- {item}" for item in value))
        elif isinstance(value, list):
            if value:
                raise located(where, line, f"{key!r} takes a single value, not a list")
        elif name == "threshold":
            try:
                self.threshold = float(value)
            except ValueError:
                raise located(where, line, f"threshold must be a number, got {value!r}") from None
        else:
            self.add_text(name, value)

    def absorb_body(self, lines: list[Line], where: object) -> None:
        head, sections = split_sections(lines)
        while head and not head[0].text.strip():
            head.pop(0)
        title = _TITLE.match(head[0].text) if head else None
        if title:
            head = head[1:]
        self.add_text("description", block_text(head))
        for section in sections:
            name = _FIELD_OF.get(section.key)
            if name is None:
                self.extra.append(Section.kept(section))
            elif name in _LISTS:
                self.lists[name] += bullet_items(section.lines)
            elif text := block_text(section.lines):  # a scalar field reads as in front matter
                first = next(line.number for line in section.lines if line.text.strip())
                self.absorb_value(section.heading, text, first, where)
        if title:  # the `# Title` names the skill only when no name was given
            self.text.setdefault("name", title.group(1))

    def add_text(self, name: str, text: str) -> None:
        if text:
            earlier = self.text.get(name)
            self.text[name] = f"{earlier}\n\n{text}" if earlier else text


def _default_name(source: str | os.PathLike[str] | None) -> str:
    if source is None:
        return ""
    path = Path(source)
    return path.parent.name if path.name.upper() == "SKILL.MD" else path.stem


def _list_section(heading: str, items: tuple[str, ...]) -> str:
    if not items:
        return ""
    return f"## {heading}\n\n" + "\n".join(hanging("- ", item) for item in items)


def _join(parts: list[str]) -> str:
    return "\n\n".join(part for part in parts if part) + "\n"
