"""Objective gates: checks whose exit code and output decide whether a round passed.

A gate never takes the agent's word for it. :class:`CommandGate` runs any command,
:class:`PytestGate` runs the tests and names the failing ones, :class:`PredicateGate` asks a
Python function. :func:`run_gates` checks them in order and stops at the first failure.
"""

from __future__ import annotations

import shlex
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from harness.core.errors import ConfigError
from harness.core.section import check_field
from harness.core.text import truncate
from harness.sandbox import CommandResult, Sandbox, default_sandbox
from harness.verify import node_ids
from harness.verify.environment import pytest_command
from harness.verify.gate_config import GATE_SECONDS, CommandGateConfig, PytestGateConfig
from harness.verify.junit import JUnitProblem, JUnitReport
from harness.verify.pytest_args import positional_paths
from harness.verify.report_channel import (
    ChannelLog,
    Collected,
    ReportChannel,
    reporter_source,
)
from harness.verify.run_outcomes import suite_report

TAIL_CHARS = 4_000
"""Most characters of output a report keeps."""

FAILURE_TEXT_CHARS = 1_200
"""Most characters kept from the end of one failing test's text."""

PYTEST_NO_TESTS = 5


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


def run_gates(
    gates: Iterable[Gate],
    workspace: str | Path,
    *,
    baselines: Mapping[str, JUnitReport] | None = None,
) -> list[GateReport]:
    """Check ``gates`` in order; the first failure ends verification (later gates do not run).

    ``baselines`` holds, by gate name, what each test gate found at the run's base commit
    (see :func:`measure_baselines`): a test that ran there must run and pass now.
    """
    reports: list[GateReport] = []
    for gate in gates:
        if isinstance(gate, SuiteGate):
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
            self.cmd, cwd=_workspace(workspace), timeout=self.timeout,
            env={"PYTHONDONTWRITEBYTECODE": "1"},
        )  # fmt: skip
        if result.timed_out:
            summary = f"`{self.name}` {result.status}"
        elif result.exit_code == 0:
            summary = f"`{self.name}` passed"
        else:
            last = _line(result.output, last=True)
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


class PytestGate:
    """pytest in the workspace; reports failing test ids and their text.

    It runs with the sandbox's Python (the project's environment, when it has one) and the
    harness's own pytest unless that environment holds one (:mod:`harness.verify.environment`).

    The verdict comes from the harness's reporter inside pytest, through a keyed channel read
    while the tests run (:mod:`harness.verify.run_outcomes`), never from a results file or the
    output. It passes only when a test passed, none failed, every phase reported passed was
    seen to run, the session finished with exit code 0, and exactly the tests a separate
    ``--collect-only`` run collects finished. With a ``baseline`` (the report at the run's base
    commit), every test that ran there must run and pass now.

    The channel lives outside the workspace; with no cache or byte code, nothing is left there.
    """

    def __init__(
        self,
        args: str | Sequence[str] = "",
        *,
        timeout: float = GATE_SECONDS,
        name: str = "pytest",
        sandbox: Sandbox | None = None,
    ) -> None:
        self.args = shlex.split(args) if isinstance(args, str) else list(args)
        self.timeout = float(check_field(PytestGateConfig, "timeout", timeout))
        self.name = name
        self.sandbox = sandbox  # where pytest runs; None: Sandbox("auto")
        self.test_paths: tuple[str, ...] = positional_paths(self.args)
        """The paths pytest runs, so that the outer loop can protect them; () for its root."""

    def check(self, workspace: str | Path, *, baseline: JUnitReport | None = None) -> GateReport:
        args = self.node_ids(_workspace(workspace))
        if isinstance(args, GateReport):
            return args
        result, junit = self.run(workspace, args)
        return self._report(result, junit, baseline)

    def measure(self, workspace: str | Path) -> JUnitReport | None:
        """What the tests find in ``workspace``, or ``None`` when pytest wrote no report."""
        args = self.node_ids(_workspace(workspace))
        if isinstance(args, GateReport):
            return None
        _, junit = self.run(workspace, args)
        return junit if isinstance(junit, JUnitReport) else None

    def run(
        self, workspace: str | Path, args: list[str] | None = None
    ) -> tuple[CommandResult, JUnitReport | str]:
        """Run pytest with ``args`` (default: the gate's) in ``workspace``: what it did, and its
        report or why none is trusted. Only a run that would pass is compared with a separate
        collection, made then."""
        root = _workspace(workspace)
        args = self.args if args is None else args
        result, log = self._pytest(root, args)
        found = suite_report(log, None, result.exit_code)
        would_pass = isinstance(found, JUnitReport) and found.passed and not found.problems
        if would_pass and result.exit_code == 0:
            _, collection = self._pytest(root, ["--collect-only", *args])
            found = suite_report(log, collection, result.exit_code)
        return result, found

    def node_ids(self, root: Path) -> list[str] | GateReport:
        """The gate's arguments with each test id cut at a space (as SWE-bench's published files
        hold them) replaced by the collected tests it stands for (:mod:`~harness.verify.node_ids`);
        a failing report naming the ids that stand for none."""
        collect = node_ids.collection_args(self.args)
        if collect is None:
            return self.args
        result, log = self._pytest(root, ["--collect-only", *collect])
        collected = next((r.ids for r in log.records if isinstance(r, Collected)), [])
        found = node_ids.resolve(self.args, collected)
        if not found.unmatched:
            return found.args
        return GateReport(
            name=self.name,
            passed=False,
            summary=f"pytest: no collected test matches {', '.join(found.unmatched)}",
            failures=found.unmatched,
            output_tail=tail(result.output, total=result.output_chars),
            duration=result.duration,
            exit_code=result.exit_code,
        )

    def _pytest(self, root: Path, args: list[str]) -> tuple[CommandResult, ChannelLog]:
        """pytest with the reporter and ``args``: what it did, and what it sent."""
        with (
            tempfile.TemporaryDirectory(prefix="harness-pytest-") as tmp,
            ReportChannel(Path(tmp)) as channel,
        ):
            sandbox = self.sandbox or default_sandbox()
            command = [*pytest_command(sandbox, reporter_source()), *channel.reporter_args()]
            command += ["-q", "-p", "no:cacheprovider"]
            result = sandbox.run(
                [*command, *args], cwd=root, timeout=self.timeout, writable=[tmp],
                env={"PYTHONDONTWRITEBYTECODE": "1"},
            )  # fmt: skip
        return result, channel.log

    def _report(
        self, result: CommandResult, junit: JUnitReport | str, baseline: JUnitReport | None
    ) -> GateReport:
        code = result.exit_code
        failures: list[str] = []
        output = tail(result.output, total=result.output_chars)
        passed = False
        if result.timed_out or result.limit:
            summary = f"pytest {result.status}"
        elif code == PYTEST_NO_TESTS:
            where = f" in {' '.join(self.test_paths)}" if self.test_paths else ""
            summary = f"pytest collected no tests (exit code 5){where}"
        elif isinstance(junit, str):
            summary = f"pytest exited with code {code} and {junit}"
            last = _line(result.output, last=True)
            summary += f": {last}" if last and code != 0 else ""
        elif junit.problems:
            failures = list(dict.fromkeys(problem.test_id for problem in junit.problems))
            summary = f"pytest: {junit.counts()}"
            uncollected = [
                f"{p.test_id} ({p.cause})" if p.cause else p.test_id
                for p in junit.problems
                if p.collection
            ]
            summary += f"; could not collect {', '.join(uncollected)}" if uncollected else ""
            summary += "; yet pytest exited with code 0" if code == 0 else ""
            output = _failure_text(junit.problems)
        else:
            summary = f"pytest: {junit.counts()}"
            missing = _not_run(junit, baseline)
            if code != 0:
                summary += f"; exited with code {code}"
                last = _line(result.output, last=True)
                summary += f": {last}" if last else ""
            elif junit.tests == 0:
                summary += "; nothing was tested"
            elif junit.passed == 0:
                summary += "; every test was skipped, so nothing was tested"
            elif missing:
                failures = missing
                summary += (
                    f"; {len(missing)} test{'s' if len(missing) > 1 else ''} that ran at the "
                    f"base commit did not pass now (skipped, deselected or gone): "
                    + ", ".join(missing[:5])
                    + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
                )
            else:
                passed = True
        return GateReport(
            name=self.name,
            passed=passed,
            summary=summary,
            failures=failures,
            output_tail=output,
            duration=result.duration,
            exit_code=code,
        )


def _not_run(report: JUnitReport, baseline: JUnitReport | None) -> list[str]:
    """The tests that ran (were not skipped) at the base and did not pass in ``report``.

    A module that could not be collected at the base is a condition of the base, not a test:
    its tests are unknown there, and now they run (and must pass) under their own ids.
    """
    if baseline is None:
        return []
    uncollected = {problem.test_id for problem in baseline.problems if problem.collection}
    return [
        test_id
        for test_id, outcome in baseline.outcomes.items()
        if outcome != "skipped"
        and test_id not in uncollected
        and report.outcomes.get(test_id) != "passed"
    ]


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
        root = _workspace(workspace)
        start = time.monotonic()
        try:
            outcome = self.fn(root)
        except Exception as exc:  # the predicate's failure is the gate's finding
            return GateReport(
                name=self.name,
                passed=False,
                summary=f"{self.name} raised {type(exc).__name__}: {_line(str(exc))}",
                output_tail=tail(traceback.format_exc()),
                duration=time.monotonic() - start,
            )
        duration = time.monotonic() - start
        if isinstance(outcome, GateReport):
            bounded = tail(outcome.output_tail)
            return outcome.model_copy(
                update={"name": self.name, "duration": duration, "output_tail": bounded}
            )
        if isinstance(outcome, bool):
            passed, message = outcome, ""
        elif (
            isinstance(outcome, tuple)
            and len(outcome) == 2
            and isinstance(outcome[0], bool)
            and isinstance(outcome[1], str)
        ):
            passed, message = outcome
        else:
            raise ConfigError(
                f"{self.name}: the predicate returned {outcome!r}; "
                "expected a bool, (bool, str) or a GateReport"
            )
        verdict = "passed" if passed else "failed"
        return GateReport(
            name=self.name,
            passed=passed,
            summary=_line(message) or f"{self.name} {verdict}",
            output_tail=tail(message),
            duration=duration,
        )


def _failure_text(problems: list[JUnitProblem]) -> str:
    """Each problem's message and the end of its text, while the report has room."""
    sections: list[str] = []
    used = 0
    for shown, problem in enumerate(problems):
        label = "FAILED" if problem.kind == "failure" else "ERROR"
        header = f"{label} {problem.test_id}: {_line(problem.message)}"
        section = header + "\n" + tail(problem.text.rstrip(), FAILURE_TEXT_CHARS)
        if sections and used + len(section) > TAIL_CHARS:
            sections.append(f"[... {len(problems) - shown} more not shown; see failures ...]")
            break
        sections.append(section)
        used += len(section)
    return "\n\n".join(sections)


def tail(text: str, limit: int = TAIL_CHARS, *, total: int | None = None) -> str:
    """The end of ``text`` in at most ``limit`` characters, marked when something was cut.

    ``total`` is the size of the original output when ``text`` is already a sample of it.
    """
    return truncate(text, limit, head_share=0, total=total)


def _line(text: str, *, last: bool = False) -> str:
    """The first (or last) non-blank line of ``text``, stripped and cut to 200 characters."""
    lines = text.strip().splitlines()
    return (lines[-1] if last else lines[0]).strip()[:200] if lines else ""


def _workspace(path: str | Path) -> Path:
    root = Path(path)
    if not root.is_dir():
        raise ConfigError(f"workspace: {root} is not a directory")
    return root
