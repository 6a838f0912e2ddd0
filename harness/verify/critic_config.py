"""``[critic]``: the critic's settings, declared once.

loop.toml reads them through :class:`~harness.spec.LoopSpec`; :class:`~harness.verify.critic.Critic`
reads its threshold's default and bounds from here, so neither is written twice.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field

from harness.core.section import Section

THRESHOLD = 8.0
"""The score a verdict passes at, when neither ``[critic] threshold`` nor SKILL.md sets one."""

Aggregate = Literal["median", "minimum", "majority"]
"""How a panel combines its critics' verdicts (see :mod:`harness.verify.panel`)."""
AGGREGATES: tuple[Aggregate, ...] = get_args(Aggregate)

ModelChoice = str | list[str]  # a list: the first whose provider is set up is used


class PanelSeatConfig(Section):
    """One ``[[critic.panel]]`` critic: its model (default: ``[critic] model``), its role (an
    editor, a fact-checker, the audience) and instructions of its own."""

    model: ModelChoice | None = None
    role: str | None = Field(None, min_length=1)
    instructions: str | None = Field(None, min_length=1)


class CriticConfig(Section):
    enabled: bool = True
    model: ModelChoice | None = None
    threshold: float | None = Field(None, ge=0, le=10)  # None: the skill's, else THRESHOLD
    criteria: str | None = None
    artifact: Literal["diff", "final", "file"] = "diff"
    file: str | None = None
    # A panel: several critics scoring each SKILL.md criterion, their verdicts combined.
    panel: list[PanelSeatConfig] = []
    aggregate: Aggregate = "median"
    spread: float = Field(3.0, gt=0, le=10)  # scores this far apart: the critics split
    on_split: Literal["report", "person"] = "report"  # person: a split pass needs approval
    prefer_other_family: bool = False  # model lists: other families than the author's first

    def threshold_for(self, skill_threshold: float | None) -> float:
        """The threshold a verdict passes at: this section's, else SKILL.md's, else THRESHOLD."""
        if self.threshold is not None:
            return self.threshold
        return skill_threshold if skill_threshold is not None else THRESHOLD


CRITIC_DEFAULTS = CriticConfig()
"""The defaults, read by the keyword arguments of the critic and the panel."""
