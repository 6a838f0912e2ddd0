"""What a pytest run's records say, checked against what was seen to run and what was collected.

:func:`suite_report` folds the reporter's records in the order they arrived. A phase that pytest
reports as passed counts only if the reporter's own hook wrapper saw it run and return: reported
passed but raising, or never seen to run, it is a failure whose message says so. A run that would
pass must also be whole: its session finished with the status the process exited with, and it
finished every test its reporter saw collected (once every plugin had selected them), and no
other. One pytest process answers for all of it.
"""

from __future__ import annotations

from harness.verify.gates import counted, listed
from harness.verify.junit import JUnitProblem, JUnitReport
from harness.verify.report_channel import (
    ChannelLog,
    Collected,
    Finished,
    Phase,
    Ran,
    Reported,
    Started,
    Uncollected,
)

NO_REPORT = "wrote no test report"

_NOT_SEEN = object()
"""A phase the reporter never saw run (``Ran.raised`` is ``None`` for one that returned)."""

_RANK = ("passed", "skipped", "failed", "error")
"""Outcomes from best to worst: a test keeps the worst of its phases."""


def suite_report(run: ChannelLog, exit_code: int | None) -> JUnitReport | str:
    """The run's report, or why it cannot be trusted (completing "pytest exited with code N and");
    ``exit_code`` is the run's."""
    if run.problem is not None:
        return run.problem
    if not any(isinstance(record, Started) for record in run.records):
        return NO_REPORT
    folded = _Fold()
    for record in run.records:
        problem = folded.take(record)
        if problem is not None:
            return problem
    report = folded.report()
    if report.problems:
        return report  # it fails as it is, and says which tests failed
    if folded.finished is None:
        return "ended before its session finished"
    if report.passed == 0:
        return report  # nothing was tested: it fails as it is
    problem = _not_whole(folded, exit_code)
    return problem if problem is not None else report


class _Fold:
    """The records taken so far: what each phase raised, each test's outcomes, the problems."""

    def __init__(self) -> None:
        self.ran: dict[tuple[str, Phase], str | None] = {}
        self.phases: dict[str, dict[Phase, str]] = {}
        self.problems: list[JUnitProblem] = []
        self.uncollected: list[str] = []
        self.failed_subtests: set[str] = set()
        self.collected: list[str] | None = None
        self.finished: Finished | None = None

    def take(self, record: object) -> str | None:
        """Take one record; a reason the run cannot be trusted, or None."""
        if isinstance(record, Ran):
            if (record.id, record.when) in self.ran:
                return f"ran the {record.when} of {record.id} twice"
            self.ran[record.id, record.when] = record.raised
        elif isinstance(record, Reported) and record.subtest is not None:
            if record.outcome == "failed":  # the test's own call report passes all the same
                self.failed_subtests.add(record.id)
                message = f"{record.subtest} failed: {record.crash}"
                self.problems.append(JUnitProblem(record.id, "failure", message, record.text))
        elif isinstance(record, Reported):
            phases = self.phases.setdefault(record.id, {})
            if record.when in phases:
                return f"reported the {record.when} of {record.id} twice"
            phases[record.when] = self._outcome(record)
        elif isinstance(record, Uncollected):
            self.uncollected.append(record.id)
            self.problems.append(
                JUnitProblem(record.id, "error", "collection failure", record.text)
            )
        elif isinstance(record, Collected):
            if self.collected is not None:
                return "collected its tests twice"
            self.collected = record.ids
        elif isinstance(record, Finished):
            self.finished = record
        return None

    def _outcome(self, record: Reported) -> str:
        """The phase's outcome; a failure becomes a problem, and so does a forged pass."""
        kind = "failure" if record.when == "call" else "error"
        if record.outcome == "skipped":
            return "skipped"
        if record.outcome == "passed":
            raised = self.ran.get((record.id, record.when), _NOT_SEEN)
            if raised is None:
                return "passed"
            seen = "it was never seen to run" if raised is _NOT_SEEN else f"it raised {raised}"
            message, text = f"pytest's report says its {record.when} passed, but {seen}", ""
        elif kind == "failure":
            message, text = record.crash, record.text
        else:
            message, text = f'failed on {record.when} with "{record.crash}"', record.text
        self.problems.append(JUnitProblem(record.id, kind, message, text))
        return "failed" if kind == "failure" else "error"

    def outcomes(self) -> dict[str, str]:
        """Each test's outcome (the worst of its phases); a test whose call was never reported
        and that neither failed nor was skipped has none."""
        found: dict[str, str] = dict.fromkeys(self.uncollected, "error")
        for test_id, phases in self.phases.items():
            worst = max(phases.values(), key=_RANK.index)
            if test_id in self.failed_subtests and worst == "passed":
                worst = "failed"
            if worst != "passed" or "call" in phases:
                found[test_id] = worst
        return found

    def report(self) -> JUnitReport:
        outcomes = self.outcomes()
        values = list(outcomes.values())
        return JUnitReport(
            tests=len(values),
            failed=values.count("failed"),
            errors=values.count("error"),
            skipped=values.count("skipped"),
            problems=self.problems,
            outcomes=outcomes,
        )


def _not_whole(run: _Fold, exit_code: int | None) -> str | None:
    """Why a passing run that finished is not the whole run, or None when it is."""
    status = run.finished.exitstatus if run.finished is not None else None
    if exit_code == 0 and status != 0:
        return f"its session ended with status {status}"
    collected = run.collected
    if collected is None:
        return "its reporter never saw what it collected"
    # a test is finished once its teardown was reported: pytest is done with it
    missing = [t for t in dict.fromkeys(collected) if "teardown" not in run.phases.get(t, {})]
    if missing:
        return f"did not finish {counted(missing, 'collected test')}: {listed(missing)}"
    known = set(collected)
    extra = [test_id for test_id in run.phases if test_id not in known]
    if extra:
        return f"reported {counted(extra, 'test')} it never collected: {listed(extra)}"
    return None
