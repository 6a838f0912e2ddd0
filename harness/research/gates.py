"""The research gates: every quote checked against its source, and the claims converged.

Both read a findings file in the round's checkout; fetched sources are looked up in the run's
archive (:mod:`harness.research.archive`), local ones in a folder of the checkout.

- :func:`citations_gate` fails the round naming each citation whose quote is not in the source
  it names, or whose source was never fetched.
- :func:`convergence_gate` records the claims in the run's ledger each time it runs and passes
  when they have stayed unchanged for ``stable_rounds`` rounds and every key claim has
  ``min_sources`` independent sources that agree (see :mod:`harness.research.claim_ledger`); the
  sources that disagree are written to ``contradictions.md`` beside the ledger, named in its
  summary and noted for the critic.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.core.atomic import atomic_write_text
from harness.core.errors import ConfigError
from harness.research.archive import SourceArchive
from harness.research.citations import check_findings
from harness.research.claim_ledger import converged
from harness.research.gate_config import BACKING_SOURCES, CITED_SOURCES, STABLE_ROUNDS
from harness.verify.gates import GateReport, PredicateGate

CONTRADICTIONS_FILE = "contradictions.md"
"""Beside the ledger: the contradictions the last check found, for the person to read."""


def citations_gate(
    file: str,
    *,
    archive: SourceArchive,
    sources: str | None = None,
    min_sources: int = CITED_SOURCES,
    require_contradictions: bool = False,
    name: str = "citations",
) -> PredicateGate:
    """A gate that checks the citations of ``file`` (relative to the workspace)."""

    def check(workspace: Path) -> GateReport:
        text = _findings(workspace, file)
        report = check_findings(
            text,
            workspace / sources if sources else None,
            archive=archive,
            keep_local=True,
            min_sources=min_sources,
            require_contradictions=require_contradictions,
        )
        return GateReport(
            name=name,
            passed=report.passed,
            summary=report.message,
            output_tail="\n".join(f"- {problem}" for problem in report.problems),
        )

    return PredicateGate(check, name=name)


def convergence_gate(
    file: str,
    *,
    archive: SourceArchive,
    ledger: Path,
    sources: str | None = None,
    stable_rounds: int = STABLE_ROUNDS,
    min_sources: int = BACKING_SOURCES,
    name: str = "convergence",
    redact: Callable[[str], str] = str,
) -> PredicateGate:
    """A gate that passes when the claims of ``file`` have converged (recorded in ``ledger``,
    and the contradictions beside it, through ``redact``: the run's redactor)."""

    def check(workspace: Path) -> GateReport:
        found = converged(
            _findings(workspace, file),
            ledger,
            sources=workspace / sources if sources else None,
            archive=archive,
            stable_rounds=stable_rounds,
            min_sources=min_sources,
            redact=redact,
        )
        output = found.report()
        first = found.problems[0] if found.problems else f"settled for {found.stable} rounds"
        disputed = list(dict.fromkeys(c.claim for c in found.contradictions))
        listed = found.listed()
        atomic_write_text(ledger.with_name(CONTRADICTIONS_FILE), redact(listed or "none\n"))
        return GateReport(
            name=name,
            passed=found.passed,
            summary=f"{output.splitlines()[0]}; {first}"
            + (f"; sources disagree on {', '.join(disputed)}" if disputed else ""),
            output_tail=output,
            notes=listed,
        )

    return PredicateGate(check, name=name)


def _findings(workspace: Path, file: str) -> str:
    path = workspace / file
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{file}: the findings cannot be read: {exc}") from None
