"""Objective gates: checks whose exit code and output decide whether a round passed.

A gate never takes the agent's word for it. :class:`CommandGate` runs any command,
:class:`PytestGate` runs the tests and names the failing ones, :class:`PredicateGate` asks a
Python function. :func:`run_gates` checks them in order and stops at the first failure.
"""

from __future__ import annotations

import shlex
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from harness.core.errors import ConfigError
from harness.core.text import truncate
from harness.sandbox import CommandResult, Sandbox, default_sandbox
from harness.verify.junit import JUnitProblem, JUnitReport, read_junit

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


@runtime_checkable
class Gate(Protocol):
    """An objective check of a workspace."""

    name: str

    def check(self, workspace: str | Path) -> GateReport: ...


def run_gates(gates: Iterable[Gate], workspace: str | Path) -> list[GateReport]:
    """Check ``gates`` in order; the first failure ends verification (later gates do not run)."""
    reports: list[GateReport] = []
    for gate in gates:
        reports.append(gate.check(workspace))
        if not reports[-1].passed:
            break
    return reports


class CommandGate:
    """Any command (a shell string or an argv list); it passes when it exits 0."""

    def __init__(
        self,
        cmd: str | Sequence[str],
        *,
        name: str | None = None,
        timeout: float = 600,
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
        self.timeout = _checked_timeout(timeout)
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
    """``python -m pytest`` in the workspace; reports failing test ids and their failure text.

    The JUnit report goes to a temporary file outside the workspace; the cache provider and
    byte-code writing are off, so checking leaves no files behind in the workspace.
    """

    def __init__(
        self,
        args: str | Sequence[str] = "",
        *,
        timeout: float = 600,
        name: str = "pytest",
        sandbox: Sandbox | None = None,
    ) -> None:
        self.args = shlex.split(args) if isinstance(args, str) else list(args)
        self.timeout = _checked_timeout(timeout)
        self.name = name
        self.sandbox = sandbox  # where pytest runs; None: Sandbox("auto")
        self.test_paths: tuple[str, ...] = _test_paths(self.args)
        """The paths pytest runs, so that the outer loop can protect them; () for its root."""

    def check(self, workspace: str | Path) -> GateReport:
        root = _workspace(workspace)
        with tempfile.TemporaryDirectory(prefix="harness-junit-") as tmp:
            report_file = Path(tmp) / "report.xml"
            command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
            command += ["-o", "junit_family=xunit1", f"--junitxml={report_file}", *self.args]
            sandbox = self.sandbox or default_sandbox()
            result = sandbox.run(
                command, cwd=root, timeout=self.timeout, writable=[tmp],
                env={"PYTHONDONTWRITEBYTECODE": "1"},
            )  # fmt: skip
            junit = read_junit(report_file, root)
        return self._report(result, junit)

    def _report(self, result: CommandResult, junit: JUnitReport | str) -> GateReport:
        code = result.exit_code
        failures: list[str] = []
        output = tail(result.output, total=result.output_chars)
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
            uncollected = [p.test_id for p in junit.problems if p.collection]
            summary += f"; could not collect {', '.join(uncollected)}" if uncollected else ""
            output = _failure_text(junit.problems)
        else:
            summary = f"pytest: {junit.counts()}"
            if code != 0:
                summary += f"; exited with code {code}"
                last = _line(result.output, last=True)
                summary += f": {last}" if last else ""
        return GateReport(
            name=self.name,
            passed=code == 0,
            summary=summary,
            failures=failures,
            output_tail=output,
            duration=result.duration,
            exit_code=code,
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


_VALUE_OPTIONS = frozenset(
    # pytest's own
    "-k -m -p -o -c -W -r --pythonwarnings --config-file --override-ini --maxfail --pdbcls "  # noqa: SIM905
    "--capture --lfnf --last-failed-no-failures --durations --durations-min --verbosity --tb "
    "--show-capture --color --code-highlight --pastebin --junitxml --junit-xml --junit-prefix "
    "--ignore --ignore-glob --deselect --confcutdir --import-mode --doctest-report "
    "--doctest-glob --rootdir --basetemp --debug --assert --log-level --log-format "
    "--log-date-format --log-cli-level --log-cli-format --log-cli-date-format --log-file "
    "--log-file-mode --log-file-level --log-file-format --log-file-date-format "
    "--log-auto-indent --log-disable "
    # common plugins: coverage, xdist, timeout, rerunfailures, randomly, hypothesis, asyncio
    "--cov --cov-report --cov-config --cov-fail-under --cov-context -n --numprocesses "
    "--maxprocesses --dist --tx --rsyncdir --timeout --timeout-method --timeout_method "
    "--session-timeout --reruns --reruns-delay --only-rerun --randomly-seed "
    "--hypothesis-profile --hypothesis-seed --hypothesis-verbosity --asyncio-mode "
    "--anyio-mode --html --css --json-report-file --ds --dc".split()
)
"""pytest options (core and common plugins) whose value may be the next argument."""


def _test_paths(args: list[str]) -> tuple[str, ...]:
    """The positional paths in pytest ``args``, node ids cut to their file; () for none.

    An option's value (``--cov src``, ``-k slow``, ``-xk slow``) is not a path.
    """
    paths: list[str] = []
    takes_value = options_done = False
    for arg in args:
        if takes_value:
            takes_value = False
        elif options_done or not arg.startswith("-") or arg == "-":
            paths.append(arg.split("::")[0])
        elif arg == "--":
            options_done = True
        else:
            takes_value = _value_follows(arg)
    return tuple(dict.fromkeys(paths))


def _value_follows(option: str) -> bool:
    """Whether ``option`` takes the next argument as its value."""
    if option.startswith("--"):
        return "=" not in option and option in _VALUE_OPTIONS
    letters = option[1:]  # a cluster of short options: -xk EXPR, or -kEXPR with the value in it
    for index, letter in enumerate(letters):
        if f"-{letter}" in _VALUE_OPTIONS:
            return index == len(letters) - 1
    return False


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


def _checked_timeout(timeout: float) -> float:
    if not timeout > 0:
        raise ConfigError(f"timeout: must be positive, got {timeout!r}")
    return timeout
