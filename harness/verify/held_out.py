"""Held-out gates: tests the agent never sees decide the round, the way benchmarks judge.

A :class:`HeldOutGate` lays a folder of files (tests, fixtures, a test patch's result) over a
private copy of the workspace it is asked to check, runs its gate there, and tells the agent only
what ``feedback`` allows. The folder lives outside the workspace; the sandbox shows it empty to
the agent's commands (see :class:`~harness.sandbox.Sandbox` ``hidden``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import get_args

from harness.core.errors import ConfigError
from harness.verify.gate_config import Feedback
from harness.verify.gates import Gate, GateReport

FEEDBACK: tuple[Feedback, ...] = get_args(Feedback)

_NOT_TOLD = "a check the agent cannot see did not pass"


class HeldOutGate:
    """``gate`` run on a copy of the workspace with ``files`` laid over it."""

    def __init__(
        self,
        gate: Gate,
        files: str | os.PathLike[str],
        *,
        feedback: Feedback = "pass_fail",
        name: str | None = None,
    ) -> None:
        if feedback not in FEEDBACK:
            raise ConfigError(f"feedback: must be one of {', '.join(FEEDBACK)}, got {feedback!r}")
        self.gate = gate
        self.files = Path(files).absolute()
        if self.files.is_symlink() or not self.files.is_dir():
            raise ConfigError(f"held_out: {self.files} is not a folder")
        self.feedback = feedback
        self.name = name or f"held-out {gate.name}"

    def check(self, workspace: str | Path) -> GateReport:
        with tempfile.TemporaryDirectory(prefix="harness-held-out-") as scratch:
            copy = Path(scratch) / "workspace"
            shutil.copytree(workspace, copy, symlinks=True, ignore=shutil.ignore_patterns(".git"))
            lay_over(self.files, copy)
            report = self.gate.check(copy)
        return self._told(report)

    def _told(self, report: GateReport) -> GateReport:
        """The report as the agent may read it."""
        if report.passed:
            summary = "the held-out tests passed"
        elif self.feedback == "none":
            summary = _NOT_TOLD
        else:
            summary = "the held-out tests failed"
        failures = report.failures if self.feedback == "ids" and not report.passed else []
        return GateReport(
            name=self.name,
            passed=report.passed,
            summary=summary,
            failures=list(failures),
            duration=report.duration,
        )


def lay_over(source: Path, target: Path) -> list[str]:
    """Copy every regular file under ``source`` to the same place under ``target``; the paths.

    Links in ``source`` are skipped; whatever stands at a destination (a file, a link the agent
    planted, a folder) is removed first, so nothing is written through a link.
    """
    placed = []
    for folder, _, files in os.walk(source, followlinks=False):  # linked folders not walked
        for name in files:
            origin = Path(folder, name)
            if origin.is_symlink() or not origin.is_file():
                continue
            relative = origin.relative_to(source)
            place(origin, target, relative)
            placed.append(relative.as_posix())
    return placed


def place(origin: Path, target: Path, relative: Path) -> None:
    """Copy the regular file ``origin`` to ``relative`` under ``target``, whatever stands on the
    way there removed first (nothing is written through a link). A ``relative`` that leaves
    ``target`` (absolute, or through ``..``) is a :class:`ValueError`, and nothing is touched."""
    if relative.is_absolute() or ".." in relative.parts:
        raise ValueError(f"{relative} is not a path inside {target}")
    current = target
    for part in relative.parts[:-1]:  # every folder on the way a real one
        current = current / part
        if current.is_symlink() or (current.exists() and not current.is_dir()):
            current.unlink()
        current.mkdir(exist_ok=True)
    destination = target / relative
    if destination.is_symlink() or destination.is_file():
        destination.unlink()
    elif destination.is_dir():
        shutil.rmtree(destination)
    shutil.copyfile(origin, destination, follow_symlinks=False)
