"""Held-out gates: tests the agent never sees decide the round, and it hears only what is allowed."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.assemble.build import build_loop, build_sandbox
from harness.core.errors import ConfigError
from harness.core.sink import NULL_SINK
from harness.sandbox import Sandbox
from harness.sandbox.bwrap import bwrap_problem
from harness.spec import LoopSpec
from harness.verify.gates import CommandGate, GateReport
from harness.verify.held_out import HeldOutGate, lay_over
from harness.verify.pytest_gate import PytestGate
from tests.conftest import git

ROOT = Path(__file__).resolve().parents[2]
HIDDEN_TEST = """\
from datetime import date

from invoicing.dates import DateRange, month


def test_month_is_the_range_of_its_days():
    assert month(2024, 12) == DateRange(date(2024, 12, 1), date(2024, 12, 31))


def test_a_range_holds_its_last_day():
    assert date(2024, 1, 31) in month(2024, 1)
"""


def _held_out(tmp_path: Path) -> Path:
    folder = tmp_path / "held_out"
    (folder / "tests").mkdir(parents=True)
    (folder / "tests" / "test_hidden.py").write_text("def test_hidden():\n    assert 1 + 1 == 2\n")
    return folder


def test_the_files_are_laid_over_a_copy_and_the_workspace_is_left_alone(tmp_path: Path) -> None:
    workspace = tmp_path / "work"
    (workspace / "tests").mkdir(parents=True)
    (workspace / "tests" / "test_hidden.py").write_text("def test_hidden():\n    pass  # weak\n")
    seen: list[str] = []

    def look(folder: str | Path) -> GateReport:
        seen.append((Path(folder) / "tests" / "test_hidden.py").read_text())
        return GateReport(name="look", passed=True, summary="ok")

    gate = HeldOutGate(_Named(look), _held_out(tmp_path))
    report = gate.check(workspace)
    assert report.passed
    assert seen == ["def test_hidden():\n    assert 1 + 1 == 2\n"]
    assert (
        workspace / "tests" / "test_hidden.py"
    ).read_text() == "def test_hidden():\n    pass  # weak\n"
    assert report.name == "held-out look"


def test_a_link_planted_where_a_held_out_file_goes_is_replaced_not_written_through(
    tmp_path: Path,
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    target = tmp_path / "copy"
    (target / "tests").mkdir(parents=True)
    (target / "tests" / "test_hidden.py").symlink_to(outside)
    placed = lay_over(_held_out(tmp_path), target)
    assert placed == ["tests/test_hidden.py"]
    assert outside.read_text() == "keep me"
    assert not (target / "tests" / "test_hidden.py").is_symlink()
    assert "1 + 1 == 2" in (target / "tests" / "test_hidden.py").read_text()


def test_a_linked_folder_on_the_way_is_replaced_too(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = tmp_path / "copy"
    target.mkdir()
    (target / "tests").symlink_to(elsewhere, target_is_directory=True)
    lay_over(_held_out(tmp_path), target)
    assert list(elsewhere.iterdir()) == []
    assert (target / "tests").is_dir()
    assert not (target / "tests").is_symlink()


@pytest.mark.parametrize(
    ("feedback", "summary", "failures"),
    [
        ("none", "a check the agent cannot see did not pass", []),
        ("pass_fail", "the held-out tests failed", []),
        ("ids", "the held-out tests failed", ["tests/test_hidden.py::test_secret_case"]),
    ],
)
def test_the_agent_is_told_only_what_feedback_allows(
    tmp_path: Path, feedback: str, summary: str, failures: list[str]
) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    folder = tmp_path / "held_out"
    (folder / "tests").mkdir(parents=True)
    (folder / "tests" / "test_hidden.py").write_text(
        "def test_secret_case():\n    assert 'expected secret value' == 'other'\n"
    )
    inner = PytestGate("tests", sandbox=Sandbox("none"))
    report = HeldOutGate(inner, folder, feedback=feedback).check(workspace)  # type: ignore[arg-type]
    assert not report.passed
    assert (report.summary, report.failures, report.output_tail) == (summary, failures, "")
    assert "expected secret value" not in report.model_dump_json()


def test_a_passing_held_out_gate_says_so(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    gate = HeldOutGate(CommandGate("test -f tests/test_hidden.py", sandbox=Sandbox("none")),
                       _held_out(tmp_path), feedback="none")  # fmt: skip
    report = gate.check(tmp_path / "work")
    assert (report.passed, report.summary) == (True, "the held-out tests passed")


def test_bad_held_out_arguments_are_configuration_errors(tmp_path: Path) -> None:
    gate = CommandGate("true")
    with pytest.raises(ConfigError, match="held_out: .* is not a folder"):
        HeldOutGate(gate, tmp_path / "missing")
    with pytest.raises(ConfigError, match="feedback: must be one of none, pass_fail, ids"):
        HeldOutGate(gate, _held_out(tmp_path), feedback="all")  # type: ignore[arg-type]


# --- the bug-fix example with a held-out test -------------------------------------------------


def _example(tmp_path: Path, *, max_iterations: int, feedback: str = "pass_fail") -> LoopSpec:
    """The bug-fix example in a git repository of its own: the visible gate runs only the
    statement tests, a held-out gate checks month() with tests the agent never sees."""
    folder = tmp_path / "examples" / "bugfix"  # its skill is ../../skills/bugfix
    shutil.copytree(ROOT / "examples" / "bugfix", folder,
                    ignore=shutil.ignore_patterns(".harness", "__pycache__", ".*_cache"))  # fmt: skip
    shutil.copytree(ROOT / "skills", tmp_path / "skills", symlinks=False)
    (folder / "held_out" / "tests").mkdir(parents=True)
    (folder / "held_out" / "tests" / "test_month_days.py").write_text(HIDDEN_TEST)
    with (folder / ".gitignore").open("a") as ignored:  # committed, every worktree would hold it
        ignored.write("held_out/\n")
    text = (folder / "loop.toml").read_text()
    text = text.replace('[[gates]]\ntype = "pytest"\nargs = "tests"\n', (
        '[[gates]]\ntype = "pytest"\nargs = "tests/test_statement.py"\n\n'
        '[[gates]]\ntype = "pytest"\nargs = "tests/test_month_days.py"\n'
        f'held_out = "held_out"\nfeedback = "{feedback}"\n'
    ))  # fmt: skip
    text = text.replace("max_iterations = 10", f"max_iterations = {max_iterations}")
    (folder / "loop.toml").write_text(text)
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "config", "user.email", "test@example.com")
    git(tmp_path, "config", "user.name", "Test")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "the example")
    return LoopSpec.from_toml(folder)


@pytest.mark.slow
def test_an_overfit_fix_passes_the_visible_gate_but_not_the_run(tmp_path: Path) -> None:
    spec = _example(tmp_path, max_iterations=1)
    result = build_loop(spec, events=NULL_SINK).run()
    assert not result.passed
    (first,) = result.rounds
    assert [(g.name, g.passed) for g in first.gates] == [
        ("pytest", True),  # the statement tests pass with month() ending a day late
        ("held-out pytest", False),
    ]
    assert first.gates[1].failures == []  # pass_fail: no test id reaches the agent
    assert first.verdict is None  # the critic is not asked about a round the checks failed


@pytest.mark.slow
@pytest.mark.parametrize(
    ("feedback", "told", "not_told"),
    [
        ("pass_fail", "the held-out tests failed", "test_month_days"),
        ("ids", "test_month_is_the_range_of_its_days", "assert month(2024, 12)"),
    ],
)
def test_the_next_round_is_told_what_feedback_allows_and_the_right_fix_passes(
    tmp_path: Path, feedback: str, told: str, not_told: str
) -> None:
    spec = _example(tmp_path, max_iterations=3, feedback=feedback)
    loop = build_loop(spec, events=NULL_SINK)
    model = loop.settings.agent.model
    result = loop.run()
    assert result.passed
    assert result.iterations == 2
    second_task = [c for c in model.calls if "Round 1 did not pass" in str(c.messages)]  # type: ignore[attr-defined]
    assert second_task, "round 2 was told about round 1"
    text = str(second_task[0].messages)
    assert told in text
    assert not_told not in text
    assert HIDDEN_TEST.splitlines()[-1].strip() not in text


def test_the_held_out_folder_must_lie_outside_the_workspace(tmp_path: Path) -> None:
    spec = _example(tmp_path, max_iterations=1)
    inside = spec.with_changes(workspace=".")  # the loop's folder holds held_out/ too
    with pytest.raises(ConfigError, match=r"field 'gates\[1\].held_out': .* must lie outside"):
        build_loop(inside, events=NULL_SINK)


def test_feedback_without_a_held_out_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "loop.toml").write_text(
        'goal = "g"\n[[gates]]\ntype = "pytest"\nfeedback = "ids"\n', encoding="utf-8"
    )
    with pytest.raises(ConfigError, match=r"field 'gates\[0\].feedback': applies to a held_out"):
        LoopSpec.from_toml(tmp_path)


@pytest.fixture
def visible_tmp() -> Iterator[Path]:
    """A folder the sandbox would show (the private ``/tmp`` already hides the pytest one)."""
    folder = Path(tempfile.mkdtemp(prefix="harness-held-out-test-", dir="/var/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.skipif(bwrap_problem() is not None, reason=f"bwrap: {bwrap_problem()}")
def test_the_agents_commands_see_the_held_out_folder_empty(visible_tmp: Path) -> None:
    spec = _example(visible_tmp, max_iterations=1)
    hidden = spec.root / "held_out" / "tests" / "test_month_days.py"
    workspace = spec.root / "project"
    shown = Sandbox("bwrap").run(["cat", str(hidden)], cwd=workspace, timeout=30)
    assert "month(2024, 12)" in shown.output  # without the held-out mounts it would be read
    sandbox = build_sandbox(spec)
    seen = sandbox.run(["cat", str(hidden)], cwd=workspace, timeout=30)
    assert seen.exit_code != 0
    assert "month(2024, 12)" not in seen.output
    listing = sandbox.run(["ls", "-A", str(spec.root / "held_out")], cwd=workspace, timeout=30)
    assert (listing.exit_code, listing.output.strip()) == (0, "")
    assert "month(2024, 12)" in hidden.read_text()  # the harness itself still reads it


class _Named:
    """A gate made of a function (PredicateGate's report, without its checks)."""

    def __init__(self, check: object) -> None:
        self.name = "look"
        self._check = check

    def check(self, workspace: str | Path) -> GateReport:
        return self._check(workspace)  # type: ignore[operator, no-any-return]
