"""The bug-fix example with a held-out test: the visible gate passes an overfit fix, the held-out
one does not, the next round hears only what ``feedback`` allows, and the agent's commands see
the held-out folder empty."""

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
