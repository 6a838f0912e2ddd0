"""The pydantic string types of SKILL.md's and progress.md's models, and :class:`Section`."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict

from harness.core.text import inert, one_line
from harness.memory.sections import (
    RawSection,
    block_text,
    heading_of,
    paragraph,
    verbatim,
)

OneLine = Annotated[str, AfterValidator(inert), AfterValidator(one_line)]
"""A string whose whitespace and newlines collapse to single spaces."""
Paragraph = Annotated[str, AfterValidator(inert), AfterValidator(paragraph)]
"""A string kept as one paragraph: lines stripped, blank lines dropped.

Every one of these strings is kept without escape sequences and control characters (but tabs
and newlines; :func:`~harness.core.text.inert`): what an agent writes into SKILL.md or
progress.md must not act on the terminal of a person who reads the file, or its diff."""


def _no_headings(text: str) -> str:
    for line in text.split("\n"):
        if heading_of(line) is not None:
            raise ValueError(
                f"the line {line!r} would start a section of its own when the file is read back"
            )
    return text


SectionBody = Annotated[
    str, AfterValidator(inert), AfterValidator(verbatim), AfterValidator(_no_headings)
]
"""The text of a section: kept as written, and without ``## `` lines, which would end it."""


class Section(BaseModel):
    """A section the harness does not interpret, kept verbatim and passed on as it is."""

    model_config = ConfigDict(frozen=True)

    heading: OneLine
    body: SectionBody = ""

    @classmethod
    def kept(cls, raw: RawSection) -> Section:
        """``raw`` kept as written, for a heading the document does not interpret."""
        return cls(heading=raw.heading, body=block_text(raw.lines))

    def render(self) -> str:
        """``## heading`` then the body, separated by a blank line."""
        line = f"## {self.heading}"
        if heading_of(line) != self.heading:  # "a #" needs a closing run to keep its '#'
            line += " ##"
        return f"{line}\n\n{self.body}" if self.body else line
