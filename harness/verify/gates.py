"""Objective gates: checks whose exit code and output decide whether a round passed.

A gate never takes the agent's word for it. :class:`CommandGate` runs any command,
:class:`~harness.verify.pytest_gate.PytestGate` runs the tests and names the failing ones,
:class:`PredicateGate` asks a Python function. :func:`run_gates` checks them in order and stops
at the first failure. What every gate shares is here: the report, the protocols, the output's
tail.
"""

from __future__ import annotations

import shlex
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from harness.core.errors import ConfigError
from harness.core.section import check_field
from harness.core.text import truncate
from harness.sandbox import Sandbox, default_sandbox
from harness.verify.gate_config import GATE_SECONDS, CommandGateConfig
from harness.verify.junit import JUnitReport

TAIL_CHARS = 4_000
"""Most characters of output a report keeps."""


class GateReport(BaseModel):
    """What one gate found. ``summary`` is one line; ``output_tail`` is bounded."""

    model_config = ConfigDict(frozen=True)

    name: str
    passed: bool
    summary: str
    failures: list[str] = Field(default_factory=list)
    output_tail: str = ""
    duration: float = 0.0
    exit_code: int | None = None
    notes: str = ""  # what a gate wants the critic to weigh (sources that disagree, say)


@runtime_checkable
class Gate(Protocol):
    """An objective check of a workspace."""

    name: str

    def check(self, workspace: str | Path) -> GateReport: ...


@runtime_checkable
class SuiteGate(Gate, Protocol):
    """A gate that runs tests, and says so through this interface.

    The outer loop protects its ``test_paths`` (``()``: the whole workspace's test files) and
    pytest's configuration, measures it once at the run's base commit, and hands it that
    ``baseline``: a test that ran there must run and pass now.
    """

    test_paths: tuple[str, ...]

    def measure(self, workspace: str | Path) -> JUnitReport | None: ...

    def check(
        self, workspace: str | Path, *, baseline: JUnitReport | None = None
    ) -> GateReport: ...


@dataclass(frozen=True)
class RoundChange:
    """The round's change against the run's base commit, as a :class:`ChangeGate` sees it."""

    base: str  # the base commit
    folder: str  # the workspace's path in the repository: "" at its top, else "app/"
    changed: tuple[str, ...]  # the paths the round changed, relative to the workspace
    read_base: Callable[[str], str | None]  # a workspace path's text at the base; None: absent
    checkout_base: Callable[[], AbstractContextManager[Path]]
    """A clean checkout of the base (its folder standing for the workspace), of its own: the
    round's checkout stays as it is while it is used."""


@runtime_checkable
class ChangeGate(Gate, Protocol):
    """A gate that judges the round's change against the base (reproduction tests): the outer
    loop hands it the :class:`RoundChange`; :meth:`check` alone cannot judge and fails."""

    def check_change(self, workspace: str | Path, change: RoundChange) -> GateReport: ...


def run_gates(
    gates: Iterable[Gate],
    workspace: str | Path,
    *,
    baselines: Mapping[str, JUnitReport] | None = None,
    change: RoundChange | None = None,
) -> list[GateReport]:
    """Check ``gates`` in order; the first failure ends verification (later gates do not run).

    ``baselines`` holds, by gate name, what each test gate found at the run's base commit
    (see :func:`measure_baselines`): a test that ran there must run and pass now. ``change``
    is the round's change, for the gates that judge it.
    """
    reports: list[GateReport] = []
    for gate in gates:
        if isinstance(gate, ChangeGate) and change is not None:
            reports.append(gate.check_change(workspace, change))
        elif isinstance(gate, SuiteGate):
            reports.append(gate.check(workspace, baseline=(baselines or {}).get(gate.name)))
        else:
            reports.append(gate.check(workspace))
        if not reports[-1].passed:
            break
    return reports


def measure_baselines(gates: Iterable[Gate], workspace: str | Path) -> dict[str, JUnitReport]:
    """What each test gate finds in ``workspace`` (a checkout of the base), by gate name.

    A gate that writes no report there has no baseline.
    """
    found: dict[str, JUnitReport] = {}
    for gate in gates:
        if isinstance(gate, SuiteGate) and (junit := gate.measure(workspace)) is not None:
            found[gate.name] = junit
    return found


class CommandGate:
    """Any command (a shell string or an argv list); it passes when it exits 0."""

    def __init__(
        self,
        cmd: str | Sequence[str],
        *,
        name: str | None = None,
        timeout: float = GATE_SECONDS,
        sandbox: Sandbox | None = None,
    ) -> None:
        if isinstance(cmd, str):
            if not cmd.strip():
                raise ConfigError("cmd: empty command")
            self.cmd: str | list[str] = cmd
        else:
            self.cmd = list(cmd)
            if not self.cmd or not all(isinstance(part, str) for part in self.cmd):
                raise ConfigError("cmd: expected a non-empty list of strings")
        self.name = name or (cmd if isinstance(cmd, str) else shlex.join(self.cmd))
        self.timeout = float(check_field(CommandGateConfig, "timeout", timeout))
        self.sandbox = sandbox  # where the command runs; None: Sandbox("auto")

    def check(self, workspace: str | Path) -> GateReport:
        sandbox = self.sandbox or default_sandbox()
        # No byte-code files: a check leaves nothing behind, and a stale .pyc written in the same
        # second as an equally long edit would hide the edit from the next check.
        result = sandbox.run(
            self.cmd, cwd=workspace_dir(workspace), timeout=self.timeout,
            env={"PYTHONDONTWRITEBYTECODE": "1"},
        )  # fmt: skip
        if result.timed_out:
            summary = f"`{self.name}` {result.status}"
        elif result.exit_code == 0:
            summary = f"`{self.name}` passed"
        else:
            last = first_line(result.output, last=True)
            summary = f"`{self.name}` failed with {result.status}"
            summary += f": {last}" if last else ""
        return GateReport(
            name=self.name,
            passed=result.exit_code == 0,
            summary=summary,
            output_tail=tail(result.output, total=result.output_chars),
            duration=result.duration,
            exit_code=result.exit_code,
        )


PredicateOutcome = bool | tuple[bool, str] | GateReport


class PredicateGate:
    """A Python check: ``fn(workspace)`` returns a bool, ``(bool, message)`` or a GateReport.

    An exception raised by ``fn`` fails the gate with the exception text and traceback.
    """

    def __init__(self, fn: Callable[[Path], PredicateOutcome], *, name: str) -> None:
        if not callable(fn):
            raise ConfigError("fn: a predicate gate needs a callable")
        if not name.strip():
            raise ConfigError("name: a predicate gate needs a name")
        self.fn = fn
        self.name = name

    def check(self, workspace: str | Path) -> GateReport:
        root = workspace_dir(workspace)
        start = time.monotonic()
        try:
            outcome = self.fn(root)
        except Exception as exc:  # the predicate's failure is the gate's finding
            return GateReport(
                name=self.name,
                passed=False,
                summary=f"{self.name} raised {type(exc).__name__}: {first_line(str(exc))}",
                output_tail=tail(traceback.format_exc()),
                duration=time.monotonic() - start,
            )
        duration = time.monotonic() - start
        if isinstance(outcome, GateReport):
            bounded = tail(outcome.output_tail)
            return outcome.model_copy(
                update={"name": self.name, "duration": duration, "output_tail": bounded}
            )
        match outcome:
            case bool():
                passed, message = outcome, ""
            case tuple((bool(), str())):
                passed, message = outcome
            case _:
                raise ConfigError(
                    f"{self.name}: the predicate returned {outcome!r}; "
                    "expected a bool, (bool, str) or a GateReport"
                )
        verdict = "passed" if passed else "failed"
        return GateReport(
            name=self.name,
            passed=passed,
            summary=first_line(message) or f"{self.name} {verdict}",
            output_tail=tail(message),
            duration=duration,
        )


def tail(text: str, limit: int = TAIL_CHARS, *, total: int | None = None) -> str:
    """The end of ``text`` in at most ``limit`` characters, marked when something was cut.

    ``total`` is the size of the original output when ``text`` is already a sample of it.
    """
    return truncate(text, limit, head_share=0, total=total)


def first_line(text: str, *, last: bool = False) -> str:
    """The first (or last) non-blank line of ``text``, stripped and cut to 200 characters."""
    lines = text.strip().splitlines()
    return (lines[-1] if last else lines[0]).strip()[:200] if lines else ""


def counted(items: Sequence[object], noun: str) -> str:
    """``3 tests``: how many ``items``, with ``noun`` in the plural when more than one."""
    return f"{len(items)} {noun}{'s' if len(items) > 1 else ''}"


def listed(items: Sequence[str]) -> str:
    """The first five, and how many more."""
    shown = ", ".join(items[:5])
    return shown + (f" and {len(items) - 5} more" if len(items) > 5 else "")


def workspace_dir(path: str | Path) -> Path:
    root = Path(path)
    if not root.is_dir():
        raise ConfigError(f"workspace: {root} is not a directory")
    return root
