"""What a loop asks a person to approve, and the answer: the files of :mod:`harness.memory.inbox`."""

from __future__ import annotations

import time
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Decision = Literal["approved", "rejected"]


class ApprovalRequest(BaseModel):
    """What a person is asked to approve."""

    model_config = ConfigDict(frozen=True)

    loop: str
    round: int = Field(ge=1)
    summary: str  # what the person reads: diff stat, gates, the critic's verdict, report path
    action: str = ""  # set when an agent's action (a permission rule's `ask`) waits, not a round
    asked_at: float = Field(default_factory=time.time)


class ApprovalAnswer(BaseModel):
    model_config = ConfigDict(frozen=True)

    round: int = Field(ge=1)
    decision: Decision
    note: str = ""
