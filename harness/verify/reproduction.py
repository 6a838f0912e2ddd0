"""The reproduction gate: the round's tests fail at the run's base commit and pass on its commit.

A fix is trusted more when a test written for the bug shows it: the test fails where the bug is
and passes where the fix is. :class:`ReproductionGate` takes the tests the round added or changed
(:mod:`harness.verify.written_tests`), or the ones its ``tests`` name, and runs them twice with
the harness's pytest gate in the sandbox: on the round's commit (the clean checkout the gates
judge) and on the base commit with the round's test files laid over it (a clean checkout of the
base of its own). Every one of them must pass on the round's commit and fail at the base;
otherwise the round fails, and the report says which test did what.

What the tests find at the base is kept in the user's state folder like the pytest gate's
baselines (:mod:`harness.verify.base_results`), under a key that adds the test files' contents
to the pytest gate's: a round, an attempt or a later run with the same tests at the same base
reads it back instead of measuring again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass
from pathlib import Path

from harness.core import nofollow
from harness.core.section import check_field
from harness.sandbox import Sandbox
from harness.verify.base_results import entry_key, read_entry, write_entry
from harness.verify.gate_config import GATE_SECONDS, ReproductionGateConfig
from harness.verify.gates import GateReport, RoundChange, counted, listed, tail, workspace_dir
from harness.verify.held_out import place
from harness.verify.junit import JUnitReport
from harness.verify.pytest_gate import PytestGate
from harness.verify.written_tests import files_tests_read, is_test_module, written_by_round

NO_TEST = "no reproduction test: the round adds no test"
EXPLAIN = (
    "A reproduction test shows the bug: it fails at the base commit (the code before this run's "
    "changes, with this round's test files) and passes on the round's commit."
)


@dataclass(frozen=True)
class Reproduction:
    """What one test did at the base and on the round's commit."""

    test_id: str
    base: str  # "failed", "error", "passed", "skipped" or "not run"
    now: str

    @property
    def reproduces(self) -> bool:
        return self.base in ("failed", "error") and self.now == "passed"

    def why_not(self) -> str:
        """Why it is no reproduction test (for one that is not)."""
        if self.now != "passed":
            said = "fails" if self.now in ("failed", "error") else f"is {self.now}"
            return f"{self.test_id} {said} on the round's commit"
        if self.base == "passed":
            return f"does not reproduce: {self.test_id} passes at the base commit"
        return f"does not reproduce: {self.test_id} is {self.base} at the base commit"


@dataclass(eq=False)
class ReproductionGate:
    """The round's reproduction tests, run at the base commit and on the round's commit."""

    tests: Sequence[str] = ()
    _: KW_ONLY
    timeout: float = GATE_SECONDS
    name: str = "reproduction"
    sandbox: Sandbox | None = None  # where pytest runs; None: Sandbox("auto")

    def __post_init__(self) -> None:
        self.tests = list(check_field(ReproductionGateConfig, "tests", list(self.tests)))
        self.timeout = float(check_field(ReproductionGateConfig, "timeout", self.timeout))

    def check(self, workspace: str | Path) -> GateReport:
        """Without the round's change there is nothing to compare: it fails, saying so."""
        workspace_dir(workspace)
        return GateReport(
            name=self.name,
            passed=False,
            summary="reproduction: no base commit to run the tests at (the workspace is not "
            "in a git repository, or the gate was run outside a loop)",
        )

    def check_change(self, workspace: str | Path, change: RoundChange) -> GateReport:
        root = workspace_dir(workspace)
        files = [path for path in files_tests_read(change.changed) if _regular(root, path)]
        modules = [path for path in files if is_test_module(path)]
        if not self.tests and not modules:
            return self._report(False, NO_TEST, [], EXPLAIN)
        runner = self._pytest(self.tests or modules)
        result, now = runner.run(root)
        if isinstance(now, str):
            return self._report(False, f"reproduction: on the round's commit pytest {now}", [],
                                tail(result.output, total=result.output_chars))  # fmt: skip
        candidates = self._candidates(now, root, change)
        if isinstance(candidates, GateReport):
            return candidates
        base = self._at_base(runner, root, files, change)
        if isinstance(base, str):
            return self._report(False, f"reproduction: at the base commit pytest {base}", [], "")
        found = [Reproduction(t, _outcome(base, t), _outcome(now, t)) for t in candidates]
        return self._judged(found, now)

    def written_tests(self, written: str | Path, change: RoundChange) -> list[str]:
        """The tests a round wrote (``change`` is its change), run in a checkout of its commit
        (``written``) to name them. How attempts vote on each other's fixes
        (:mod:`harness.scale.repro_vote`), with :meth:`passing`."""
        root = workspace_dir(written)
        changed = files_tests_read(change.changed)
        modules = [path for path in changed if is_test_module(path) and _regular(root, path)]
        if not modules:
            return []
        _, found = self._pytest(modules).run(root)
        outcomes = found.outcomes if isinstance(found, JUnitReport) else {}
        return written_by_round(outcomes, change.read_base, lambda path: _text(root, path))

    def passing(
        self, workspace: str | Path, written: Path, change: RoundChange, tests: Sequence[str]
    ) -> list[str]:
        """Which of ``tests`` (a round's: :meth:`written_tests`) pass in ``workspace``, with that
        round's test files (from ``written``) laid over it: ``workspace`` is changed."""
        root = workspace_dir(workspace)
        files = [path for path in files_tests_read(change.changed) if _regular(written, path)]
        for path in files:
            place(written / path, root, Path(path))
        modules = list(dict.fromkeys(test.split("::")[0] for test in tests))
        _, found = self._pytest(modules).run(root)
        outcomes = found.outcomes if isinstance(found, JUnitReport) else {}
        return [test for test in tests if outcomes.get(test) == "passed"]

    def _candidates(
        self, now: JUnitReport, root: Path, change: RoundChange
    ) -> list[str] | GateReport:
        """The tests judged: those named (each must have run), else those the round wrote."""
        ran = list(now.outcomes)
        if self.tests:
            missing = [name for name in self.tests if not any(_within(t, name) for t in ran)]
            if missing:
                summary = f"reproduction: no test ran for {', '.join(missing)}"
                return self._report(False, summary, missing, EXPLAIN)
            return [test for test in ran if any(_within(test, name) for name in self.tests)]
        written = written_by_round(ran, change.read_base, lambda path: _text(root, path))
        if not written:
            summary = NO_TEST.replace("adds no test", "adds or changes no test")
            return self._report(False, summary, [], EXPLAIN)
        return written

    def _at_base(
        self, runner: PytestGate, root: Path, files: list[str], change: RoundChange
    ) -> JUnitReport | str:
        """The tests' report at the base with the round's test ``files`` laid over it: kept, or
        measured in a clean checkout of the base and kept."""
        key = _key(runner, root, files, change)
        kept = read_entry(key) if key is not None else None
        if kept is not None:
            return kept
        with change.checkout_base() as base:
            for path in files:
                place(root / path, base, Path(path))
            _, found = runner.run(base)
        if key is not None and isinstance(found, JUnitReport):
            write_entry(key, found)
        return found

    def _judged(self, found: list[Reproduction], now: JUnitReport) -> GateReport:
        failing = [r for r in found if not r.reproduces]
        lines = [f"{r.test_id}: {r.base} at the base commit, {r.now} now" for r in found]
        if not failing:
            shown = listed([r.test_id for r in found])
            summary = f"reproduction: {counted(found, 'test')} fail at the base commit and pass now"
            return self._report(True, f"{summary}: {shown}", [], "\n".join(lines))
        first = failing[0].why_not()
        more = f" (and {len(failing) - 1} more)" if len(failing) > 1 else ""
        problems = [p for p in now.problems if p.test_id in {r.test_id for r in failing}]
        text = "\n".join([*lines, "", EXPLAIN, *(f"\n{p.test_id}:\n{p.text}" for p in problems)])
        return self._report(False, f"reproduction: {first}{more}", [r.test_id for r in failing],
                            tail(text))  # fmt: skip

    def _pytest(self, args: Sequence[str]) -> PytestGate:
        return PytestGate(args, timeout=self.timeout, name=self.name, sandbox=self.sandbox)

    def _report(self, passed: bool, summary: str, failures: list[str], text: str) -> GateReport:
        return GateReport(
            name=self.name, passed=passed, summary=summary, failures=failures, output_tail=text
        )


def _outcome(report: JUnitReport, test_id: str) -> str:
    """What ``test_id`` did in ``report``: its outcome; "error" when its module could not be
    collected (the bug breaks the import); "not run" otherwise."""
    if test_id in report.outcomes:
        return report.outcomes[test_id]
    uncollected = [p.test_id for p in report.problems if p.collection]
    return "error" if any(_within(test_id, module) for module in uncollected) else "not run"


def _within(test_id: str, name: str) -> bool:
    """Whether ``test_id`` is ``name`` or one of the tests it stands for (a module, a class, a
    parametrised test)."""
    return test_id == name or test_id.startswith((f"{name}::", f"{name}["))


def _regular(root: Path, path: str) -> bool:
    """Whether ``path`` is a regular file in ``root`` (not deleted, not a link)."""
    parts = Path(path).parts
    steps = [root.joinpath(*parts[:end]) for end in range(1, len(parts) + 1)]
    return steps[-1].is_file() and not any(step.is_symlink() for step in steps)


def _text(root: Path, path: str) -> str | None:
    try:
        return nofollow.read_text(root / path, root=root)
    except (OSError, UnicodeDecodeError, nofollow.UnsafePath):
        return None


def _key(runner: PytestGate, root: Path, files: list[str], change: RoundChange) -> str | None:
    """The key of the tests' results at the base: the pytest gate's, and the files laid over."""
    gate = entry_key(runner, base=change.base, folder=change.folder)
    if gate is None:
        return None
    digest = hashlib.sha256(gate.encode())
    for path in sorted(files):
        digest.update(f"\0{path}\0".encode())
        digest.update(hashlib.sha256((root / path).read_bytes()).digest())
    return digest.hexdigest()
