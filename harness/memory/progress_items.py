"""The parts of progress.md as models: checklist items, gate summaries and attempts."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from harness.core.text import one_line
from harness.memory.progress_terms import critic_mark, gate_line
from harness.memory.sections import hanging
from harness.memory.text_fields import OneLine, Paragraph


class ChecklistItem(BaseModel):
    """One ``- [ ]`` / ``- [x]`` line."""

    model_config = ConfigDict(frozen=True)

    text: OneLine = Field(min_length=1)
    done: bool = False

    def render(self) -> str:
        return f"- [{'x' if self.done else ' '}] {self.text}"


class GateSummary(BaseModel):
    """A gate's result in an attempt: ``pytest — failed (tests/test_x.py::test_a)``."""

    model_config = ConfigDict(frozen=True)

    name: OneLine = Field(min_length=1)
    passed: bool
    detail: OneLine = ""

    @classmethod
    def parse(cls, text: str) -> GateSummary | None:
        """The summary a gate line describes, or ``None`` for free text."""
        found = gate_line(text)
        return None if found is None else cls(**found._asdict())

    def render(self) -> str:
        state = "passed" if self.passed else "failed"
        return f"{self.name} — {state}" + (f" ({self.detail})" if self.detail else "")


class Attempt(BaseModel):
    """What one round tried and how it ended."""

    model_config = ConfigDict(frozen=True)

    round: int = Field(ge=1)
    outcome: OneLine = ""
    gates: tuple[GateSummary | str, ...] = ()
    critic_score: float | None = Field(default=None, ge=0, le=10, allow_inf_nan=False)
    tokens: int = Field(default=0, ge=0)
    cost_usd: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    commit: OneLine = ""
    summary: Paragraph = ""
    extra: tuple[str, ...] = ()

    @field_validator("critic_score")
    @classmethod
    def _hundredths(cls, value: float | None) -> float | None:
        return None if value is None else critic_mark(value)

    @field_validator("cost_usd")
    @classmethod
    def _micro_dollars(cls, value: float) -> float:
        return round(value, 6)

    @field_validator("gates", mode="before")
    @classmethod
    def _gates(cls, value: object) -> object:
        return tuple(_gate(g) for g in value) if isinstance(value, list | tuple) else value

    @field_validator("extra")
    @classmethod
    def _extra(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(line.rstrip() for line in value if line.strip())

    def render(self) -> str:
        heading = f"### Round {self.round}" + (f" — {self.outcome}" if self.outcome else "")
        bullets = [f"- Gate: {g.render() if isinstance(g, GateSummary) else g}" for g in self.gates]
        if self.critic_score is not None:
            bullets.append(f"- Critic: {self.critic_score!r}/10")
        cost = f"{self.cost_usd:.6f}".rstrip("0").rstrip(".")
        bullets.append(f"- Tokens: {self.tokens} · cost ${cost}")
        if self.commit:
            bullets.append(f"- Commit: {self.commit}")
        bullets += self.extra  # before the summary, whose indented lines run on
        if self.summary:
            bullets.append(hanging("- Summary: ", self.summary))
        return heading + "\n\n" + "\n".join(bullets)


def _gate(gate: object) -> object:
    """Free text that reads as a gate summary becomes one, so a save and load agree."""
    if isinstance(gate, str):
        text = one_line(gate)
        if not text:
            raise ValueError("a gate line needs text")
        return GateSummary.parse(text) or text
    return gate
