"""The research gates' ``[[gates]]``, declared once: ``citations`` and ``convergence``.

loop.toml reads them through :class:`~harness.spec.LoopSpec`; the gates
(:mod:`harness.research.gates`) and the checks they run (:mod:`harness.research.citations`,
:mod:`harness.research.claim_ledger`) take their defaults from here.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from harness.core.section import Section

CITED_SOURCES = 1
"""Distinct sources a findings file must quote (with every quote found in its source)."""

STABLE_ROUNDS = 2
"""Rounds the claims must stand unchanged before they count as converged."""

BACKING_SOURCES = 2
"""Independent sources each key claim needs before it counts as converged."""


class CitationsGateConfig(Section):
    """Every quote in ``file`` found in the source it cites: a file in ``sources`` (a folder of
    the workspace) or a source fetched in this run (its id or address)."""

    type: Literal["citations"]
    file: str = Field(min_length=1)
    sources: str | None = Field(None, min_length=1)
    min_sources: int = Field(CITED_SOURCES, ge=0)  # distinct sources with a verified quote
    require_contradictions: bool = False  # a non-empty "## Contradictions" section
    name: str = Field("citations", min_length=1)


class ConvergenceGateConfig(Section):
    """The claims in ``file`` unchanged for ``stable_rounds`` rounds, each key claim backed by
    ``min_sources`` independent sources that do not disagree."""

    type: Literal["convergence"]
    file: str = Field(min_length=1)
    sources: str | None = Field(None, min_length=1)
    stable_rounds: int = Field(STABLE_ROUNDS, ge=1, le=100)
    min_sources: int = Field(BACKING_SOURCES, ge=1)
    name: str = Field("convergence", min_length=1)
