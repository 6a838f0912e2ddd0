"""The pytest gate: the tests run in the sandbox, and the failing ones named.

Its verdict comes from the harness's own reporter inside pytest, through a keyed channel
(:mod:`harness.verify.report_channel`, :mod:`harness.verify.run_outcomes`), never from the
output; what every gate shares (the report, the protocols, the output's tail) is in
:mod:`harness.verify.gates`.
"""

from __future__ import annotations

import shlex
import tempfile
from collections.abc import Sequence
from pathlib import Path

from harness.core.section import check_field
from harness.sandbox import CommandResult, Sandbox, default_sandbox
from harness.verify import node_ids
from harness.verify.gate_config import GATE_SECONDS, PytestGateConfig
from harness.verify.gates import TAIL_CHARS, GateReport, first_line, listed, tail, workspace_dir
from harness.verify.junit import JUnitProblem, JUnitReport
from harness.verify.pytest_args import positional_paths
from harness.verify.pytest_runtime import pytest_command
from harness.verify.report_channel import (
    ChannelLog,
    Collected,
    ReportChannel,
    reporter_source,
)
from harness.verify.run_outcomes import suite_report

FAILURE_TEXT_CHARS = 1_200
"""Most characters kept from the end of one failing test's text."""

PYTEST_NO_TESTS = 5


class PytestGate:
    """pytest in the workspace; reports failing test ids and their text.

    It runs with the sandbox's Python (the project's environment, when it has one) and the
    harness's own pytest unless that environment holds one (:mod:`harness.verify.pytest_runtime`).

    The verdict comes from the harness's reporter inside pytest, through a keyed channel read
    while the tests run (:mod:`harness.verify.run_outcomes`), never from a results file or the
    output. It passes only when a test passed, none failed, every phase reported passed was
    seen to run, the session finished with exit code 0, and exactly the tests the reporter saw
    collected finished: one pytest process per check. With a ``baseline`` (the report at the
    run's base commit), every test that ran there must run and pass now.

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
        args = self.node_ids(workspace_dir(workspace))
        if isinstance(args, GateReport):
            return args
        result, junit = self.run(workspace, args)
        return self._report(result, junit, baseline)

    def measure(self, workspace: str | Path) -> JUnitReport | None:
        """What the tests find in ``workspace``, or ``None`` when pytest wrote no report."""
        args = self.node_ids(workspace_dir(workspace))
        if isinstance(args, GateReport):
            return None
        _, junit = self.run(workspace, args)
        return junit if isinstance(junit, JUnitReport) else None

    def run(
        self, workspace: str | Path, args: list[str] | None = None
    ) -> tuple[CommandResult, JUnitReport | str]:
        """Run pytest with ``args`` (default: the gate's) in ``workspace``: what it did, and its
        report or why none is trusted."""
        root = workspace_dir(workspace)
        result, log = self._pytest(root, self.args if args is None else args)
        return result, suite_report(log, result.exit_code)

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
        last = first_line(result.output, last=True) if code != 0 else ""
        last = f": {last}" if last else ""  # the output's last line, after a failing exit
        if result.timed_out or result.limit:
            summary = f"pytest {result.status}"
        elif code == PYTEST_NO_TESTS:
            where = f" in {' '.join(self.test_paths)}" if self.test_paths else ""
            summary = f"pytest collected no tests (exit code 5){where}"
        elif isinstance(junit, str):
            summary = f"pytest exited with code {code} and {junit}{last}"
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
                summary += f"; exited with code {code}{last}"
            elif junit.tests == 0:
                summary += "; nothing was tested"
            elif junit.passed == 0:
                summary += "; every test was skipped, so nothing was tested"
            elif missing:
                failures = missing
                summary += (
                    f"; {len(missing)} test{'s' if len(missing) > 1 else ''} that ran at the base "
                    f"commit did not pass now (skipped, deselected or gone): {listed(missing)}"
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


def _failure_text(problems: list[JUnitProblem]) -> str:
    """Each problem's message and the end of its text, while the report has room."""
    sections: list[str] = []
    used = 0
    for shown, problem in enumerate(problems):
        label = "FAILED" if problem.kind == "failure" else "ERROR"
        header = f"{label} {problem.test_id}: {first_line(problem.message)}"
        section = header + "\n" + tail(problem.text.rstrip(), FAILURE_TEXT_CHARS)
        if sections and used + len(section) > TAIL_CHARS:
            sections.append(f"[... {len(problems) - shown} more not shown; see failures ...]")
            break
        sections.append(section)
        used += len(section)
    return "\n\n".join(sections)
