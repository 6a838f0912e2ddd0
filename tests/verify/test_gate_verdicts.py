"""Gate verdicts from what a check left behind: each outcome exactly, and no pass by accident.

The pytest gate's verdict is a pure function of the command's result, its JUnit report and the
base's report; these tests hand it each combination directly (the gate's runs of real pytest are
in test_gates.py and test_pytest_gate_tricks.py), so the mutation run of the verdict code is fast.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.core.errors import ConfigError
from harness.sandbox import CommandResult, Sandbox
from harness.verify.gates import TAIL_CHARS, CommandGate, GateReport, PredicateGate, run_gates
from harness.verify.junit import JUnitProblem, JUnitReport
from harness.verify.pytest_gate import FAILURE_TEXT_CHARS, PytestGate


def result(code: int | None, output: str = "", **kwargs: object) -> CommandResult:
    options: dict = {"timed_out": False, "duration": 1.5, "output_chars": len(output),
                     "timeout": 60.0, **kwargs}  # fmt: skip
    return CommandResult(exit_code=code, output=output, **options)


def junit(
    passed: int = 0, *, failed: int = 0, errors: int = 0, skipped: int = 0,
    problems: tuple[JUnitProblem, ...] = (), outcomes: dict[str, str] | None = None,
) -> JUnitReport:  # fmt: skip
    total = passed + failed + errors + skipped
    return JUnitReport(total, failed, errors, skipped, list(problems), outcomes or {})


def verdict(
    run: CommandResult, report: JUnitReport | str, baseline: JUnitReport | None = None,
    args: str = "",
) -> GateReport:  # fmt: skip
    return PytestGate(args)._report(run, report, baseline)


def test_a_clean_report_with_a_passing_test_and_exit_zero_passes() -> None:
    gate = verdict(result(0, "1 passed"), junit(1))
    assert gate == GateReport(
        name="pytest", passed=True, summary="pytest: 1 passed of 1 tests", failures=[],
        output_tail="1 passed", duration=1.5, exit_code=0,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("run", "report", "summary"),
    [
        (result(0), junit(0), "pytest: no tests ran; nothing was tested"),
        (result(0), junit(skipped=2), "pytest: 2 skipped of 2 tests; every test was skipped, so "
         "nothing was tested"),
        (result(3, "boom\nINTERNALERROR last words\n\n"), junit(2),
         "pytest: 2 passed of 2 tests; exited with code 3: INTERNALERROR last words"),
        (result(1, "  \n"), junit(1), "pytest: 1 passed of 1 tests; exited with code 1"),
        (result(5), junit(0), "pytest collected no tests (exit code 5)"),
        (result(0, "done\n"), "wrote no test report", "pytest exited with code 0 and wrote no "
         "test report"),
        (result(2, "first\nlast line\n"), "wrote no test report",
         "pytest exited with code 2 and wrote no test report: last line"),
        (result(None, timed_out=True), junit(1),
         "pytest timed out after 60s (process group killed)"),
        (result(None, limit="memory limit (512 MB)"), junit(1),
         "pytest killed: memory limit (512 MB) exceeded"),
        (result(0, limit="process limit (64)"), junit(3),
         "pytest killed: process limit (64) exceeded"),
    ],
)  # fmt: skip
def test_anything_short_of_a_clean_passing_run_fails_and_says_what(
    run: CommandResult, report: JUnitReport | str, summary: str
) -> None:
    gate = verdict(run, report)
    assert (gate.passed, gate.summary, gate.failures) == (False, summary, [])
    assert gate.exit_code == run.exit_code


def test_no_tests_collected_names_the_paths_pytest_was_given() -> None:
    gate = verdict(result(5), junit(0), args="tests/unit tests/api -q")
    assert gate.summary == "pytest collected no tests (exit code 5) in tests/unit tests/api"


def problem(
    test_id: str, kind: str = "failure", message: str = "assert 1 == 2", text: str = ""
) -> JUnitProblem:
    return JUnitProblem(test_id, kind, message, text or f"def {test_id}():\n>   assert 1 == 2")


def test_failing_tests_are_named_once_each_with_their_messages() -> None:
    problems = (problem("t::a"), problem("t::b", "error", "fixture 'db' not found"),
                problem("t::a", "error", "teardown failed"))  # fmt: skip
    gate = verdict(result(1, "raw output"), junit(3, failed=1, errors=2, problems=problems))
    assert gate.passed is False
    assert gate.failures == ["t::a", "t::b"]
    assert gate.summary == "pytest: 1 failed, 2 errors, 3 passed of 6 tests"
    assert gate.output_tail == (
        "FAILED t::a: assert 1 == 2\ndef t::a():\n>   assert 1 == 2\n\n"
        "ERROR t::b: fixture 'db' not found\ndef t::b():\n>   assert 1 == 2\n\n"
        "ERROR t::a: teardown failed\ndef t::a():\n>   assert 1 == 2"
    )


def test_a_module_that_cannot_be_collected_is_named_even_with_exit_zero() -> None:
    broken = problem("tests/test_x.py", "error", "collection failure", "SyntaxError")
    gate = verdict(result(0), junit(1, errors=1, problems=(broken, problem("t::a"))))
    assert gate.passed is False
    assert gate.summary == (
        "pytest: 1 error, 1 passed of 2 tests; could not collect tests/test_x.py; yet pytest "
        "exited with code 0"
    )
    assert gate.failures == ["tests/test_x.py", "t::a"]


def test_the_failure_text_stops_when_the_report_is_full_and_says_how_many_are_left() -> None:
    long = "x" * FAILURE_TEXT_CHARS
    problems = tuple(problem(f"t::{n}", text=long) for n in range(10))
    text = verdict(result(1), junit(failed=10, problems=problems)).output_tail
    sections = text.split("\n\n")
    shown = [s for s in sections if s.startswith("FAILED ")]
    assert len(shown) == 3  # each section is just over 1 200 characters; 4 000 hold three
    assert sections[-1] == "[... 7 more not shown; see failures ...]"
    assert all(len(s) <= FAILURE_TEXT_CHARS + 40 for s in shown)
    assert sum(len(s) for s in shown) <= TAIL_CHARS
    one = verdict(result(1), junit(failed=1, problems=(problem("t::big", text="y" * 9000),)))
    assert one.output_tail.startswith("FAILED t::big: assert 1 == 2\n")
    assert "more not shown" not in one.output_tail  # the first failure is always shown


def base(**outcomes: str) -> JUnitReport:
    named = {f"t::{k}": v for k, v in outcomes.items()}
    return junit(sum(v == "passed" for v in named.values()), skipped=sum(
        v == "skipped" for v in named.values()), outcomes=named)  # fmt: skip


def test_a_test_that_ran_at_the_base_must_pass_now() -> None:
    baseline = base(a="passed", b="failed", c="skipped", d="error")
    now = junit(2, skipped=1, outcomes={"t::a": "passed", "t::b": "skipped", "t::c": "passed"})
    gate = verdict(result(0), now, baseline)
    assert gate.passed is False
    assert gate.failures == ["t::b", "t::d"]
    assert gate.summary == (
        "pytest: 2 passed, 1 skipped of 3 tests; 2 tests that ran at the base commit did not "
        "pass now (skipped, deselected or gone): t::b, t::d"
    )


def test_one_missing_test_is_named_in_the_singular_and_six_are_cut_to_five() -> None:
    gate = verdict(result(0), junit(1, outcomes={"t::a": "passed"}), base(a="passed", z="passed"))
    assert gate.summary.endswith("; 1 test that ran at the base commit did not pass now "
                                 "(skipped, deselected or gone): t::z")  # fmt: skip
    six = base(**{name: "passed" for name in "abcdef"})
    many = verdict(result(0), junit(1, outcomes={"t::x": "passed"}), six)
    assert many.failures == [f"t::{name}" for name in "abcdef"]
    assert many.summary.endswith(": t::a, t::b, t::c, t::d, t::e and 1 more")
    five = base(**{name: "passed" for name in "abcde"})
    assert verdict(result(0), junit(1), five).summary.endswith(": t::a, t::b, t::c, t::d, t::e")


def test_every_test_of_the_base_passing_now_passes_and_new_tests_are_welcome() -> None:
    baseline = base(a="passed", s="skipped")
    now = junit(2, skipped=1, outcomes={"t::a": "passed", "t::s": "skipped", "t::new": "passed"})
    gate = verdict(result(0), now, baseline)
    assert (gate.passed, gate.failures) == (True, [])
    assert gate.summary == "pytest: 2 passed, 1 skipped of 3 tests"


def predicate(outcome: object, name: str = "check") -> PredicateGate:
    return PredicateGate(lambda workspace: outcome, name=name)  # type: ignore[arg-type,return-value]


def test_run_gates_stops_at_the_first_failure_and_hands_each_pytest_gate_its_baseline(
    tmp_path: Path,
) -> None:
    (tmp_path / "test_one.py").write_text("def test_one():\n    assert True\n")
    gone = base(gone="passed")
    first = run_gates([predicate(True, "a"), PytestGate(name="unit")],
                      tmp_path, baselines={"unit": gone})  # fmt: skip
    assert [(g.name, g.passed) for g in first] == [("a", True), ("unit", False)]
    assert first[1].failures == ["t::gone"]
    stopped = run_gates([predicate(True, "a"), predicate(False, "b"), predicate(True, "c")],
                        tmp_path)  # fmt: skip
    assert [(g.name, g.passed) for g in stopped] == [("a", True), ("b", False)]
    assert run_gates([], tmp_path) == []


def test_a_predicates_answer_is_its_verdict(tmp_path: Path) -> None:
    assert predicate(True).check(tmp_path).model_dump(exclude={"duration"}) == {
        "name": "check", "passed": True, "summary": "check passed", "failures": [],
        "output_tail": "", "exit_code": None, "notes": "",
    }  # fmt: skip
    failed = predicate((False, "\n  missing README\nsecond line")).check(tmp_path)
    assert (failed.passed, failed.summary) == (False, "missing README")
    assert failed.output_tail == "\n  missing README\nsecond line"
    quiet = predicate((False, "")).check(tmp_path)
    assert (quiet.passed, quiet.summary) == (False, "check failed")
    for wrong in ((True,), (True, "a", "b"), ("yes", "msg"), (True, 3), 1, None):
        with pytest.raises(Exception, match="the predicate returned"):
            predicate(wrong).check(tmp_path)


def test_a_predicates_own_report_keeps_its_verdict_under_the_gates_name(tmp_path: Path) -> None:
    own = GateReport(name="inner", passed=False, summary="3 links broken", failures=["a.md"],
                     output_tail="z" * (TAIL_CHARS + 10), exit_code=7)  # fmt: skip
    gate = predicate(own, "links").check(tmp_path)
    assert (gate.name, gate.passed, gate.summary, gate.failures, gate.exit_code) == (
        "links", False, "3 links broken", ["a.md"], 7,
    )  # fmt: skip
    assert len(gate.output_tail) < TAIL_CHARS + 10
    assert gate.output_tail.endswith("z" * 100)


def test_a_predicate_that_raises_fails_with_the_exception_named(tmp_path: Path) -> None:
    def boom(workspace: Path) -> bool:
        raise KeyError("\n'config'\nmore")

    gate = PredicateGate(boom, name="cfg").check(tmp_path)
    assert (gate.passed, gate.summary) == (False, "cfg raised KeyError: \"\\n'config'\\nmore\"")
    assert "Traceback (most recent call last)" in gate.output_tail
    assert gate.output_tail.rstrip().endswith("KeyError: \"\\n'config'\\nmore\"")


NONE = Sandbox("none")


@pytest.mark.parametrize(
    ("cmd", "passed", "summary", "code"),
    [("true", True, "`true` passed", 0),
     ("echo first; echo; echo last words; echo; exit 3", False,
      "`echo first; echo; echo last words; echo; exit 3` failed with exit code 3: last words", 3),
     ("exit 1", False, "`exit 1` failed with exit code 1", 1)],
)  # fmt: skip
def test_a_command_passes_only_when_it_exits_zero(
    tmp_path: Path, cmd: str, passed: bool, summary: str, code: int
) -> None:
    gate = CommandGate(cmd, sandbox=NONE).check(tmp_path)
    assert (gate.name, gate.passed, gate.summary, gate.exit_code) == (cmd, passed, summary, code)


def test_a_command_that_times_out_fails_and_says_so(tmp_path: Path) -> None:
    gate = CommandGate("sleep 30", sandbox=NONE, timeout=0.3).check(tmp_path)
    assert (gate.passed, gate.exit_code) == (False, None)
    assert gate.summary == "`sleep 30` timed out after 0.3s (process group killed)"


def test_a_command_gate_writes_no_byte_code(tmp_path: Path) -> None:
    (tmp_path / "mod.py").write_text("X = 1\n")
    gate = CommandGate(["python", "-c", "import mod"], sandbox=NONE).check(tmp_path)
    assert gate.passed
    assert not (tmp_path / "__pycache__").exists()


def sized(test_id: str, size: int) -> JUnitProblem:
    """A failure whose section in the report is exactly ``size`` characters."""
    header = f"FAILED {test_id}: m\n"
    return JUnitProblem(test_id, "failure", "m", "t" * (size - len(header)))


def test_failure_sections_fill_the_report_to_exactly_its_size_and_not_one_more() -> None:
    fits = (sized("t::1", 1000), sized("t::2", 1000), sized("t::3", 1000), sized("t::4", 1000),
            sized("t::5", 10))  # fmt: skip
    text = verdict(result(1), junit(failed=5, problems=fits)).output_tail
    assert [s.split(":")[2] for s in text.split("\n\n")[:-1]] == ["1", "2", "3", "4"]
    assert text.endswith("\n\n[... 1 more not shown; see failures ...]")
    over = (sized("t::1", 1000), sized("t::2", 1000), sized("t::3", 1000), sized("t::4", 1001))
    text = verdict(result(1), junit(failed=4, problems=over)).output_tail
    assert text.endswith("\n\n[... 1 more not shown; see failures ...]")
    assert "FAILED t::4" not in text


def test_a_command_gate_runs_in_the_sandbox_it_was_given(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    gate = CommandGate("touch ../outside", sandbox=NONE).check(workspace)
    assert gate.passed  # no sandbox: the folder beside the workspace is writable
    assert (tmp_path / "outside").exists()


def test_a_failure_text_of_exactly_its_limit_is_whole_and_one_more_is_marked() -> None:
    whole = "w" * 1_199 + "W"  # 1 200 characters, the limit
    text = verdict(result(1), junit(failed=1, problems=(problem("t::a", text=whole),))).output_tail
    assert text == "FAILED t::a: assert 1 == 2\n" + whole
    assert "truncated" not in text
    longer = "v" + whole  # 1 201 characters: the first is cut and the cut is counted
    text = verdict(result(1), junit(failed=1, problems=(problem("t::a", text=longer),))).output_tail
    kept = text.split("\n", 1)[1]
    assert len(kept) == 1_200
    assert kept.startswith("[... ")
    assert "characters truncated ...]" in kept
    assert kept.endswith("wwwW")
    assert "v" not in kept


def test_gates_are_built_with_their_defaults_and_names() -> None:
    command = CommandGate("make check")
    assert (command.name, command.cmd, command.timeout, command.sandbox) == (
        "make check", "make check", 600, None
    )  # fmt: skip
    argv = CommandGate(["ruff", "check", "a b.py"], timeout=5, sandbox=NONE)
    assert (argv.name, argv.cmd, argv.timeout, argv.sandbox) == (
        "ruff check 'a b.py'", ["ruff", "check", "a b.py"], 5, NONE
    )  # fmt: skip
    assert CommandGate("true", name="named").name == "named"
    pytest_gate = PytestGate("-q 'tests/unit' -k fast")
    assert (pytest_gate.name, pytest_gate.timeout, pytest_gate.sandbox) == ("pytest", 600, None)
    assert pytest_gate.args == ["-q", "tests/unit", "-k", "fast"]
    assert pytest_gate.test_paths == ("tests/unit",)
    listed = PytestGate(["tests a"], timeout=7, name="unit", sandbox=NONE)
    assert (listed.args, listed.timeout, listed.name, listed.sandbox) == (
        ["tests a"], 7, "unit", NONE
    )  # fmt: skip


@pytest.mark.parametrize(
    ("cmd", "message"),
    [
        ("  ", "cmd: empty command"),
        ([], "cmd: expected a non-empty list of strings"),
        (["ls", 3], "cmd: expected a non-empty list of strings"),
    ],
)
def test_a_command_gate_without_a_command_is_refused(cmd: object, message: str) -> None:
    with pytest.raises(ConfigError, match=f"^{message}$"):
        CommandGate(cmd)  # type: ignore[arg-type]
