"""``Budget``: a run's ceilings, declared once for loop.toml's ``[budget]``, a batch task's
``budget`` and the Python API; the meter that enforces it is :mod:`harness.models.budget`."""

from __future__ import annotations

from pydantic import Field
from pydantic.dataclasses import dataclass

from harness.core.section import SECTION_CONFIG, named_errors


@named_errors("budget")
@dataclass(config=SECTION_CONFIG)
class Budget:
    """Ceilings for a whole run: author, critic and summariser calls together (None: none)."""

    tokens: int | None = Field(default=None, gt=0, strict=True)
    cost_usd: float | None = Field(default=None, gt=0)
    seconds: float | None = Field(default=None, gt=0)
