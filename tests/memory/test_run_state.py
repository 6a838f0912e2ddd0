"""The ## Run section of progress.md: read back as written, and as a person may edit it."""

from __future__ import annotations

from pathlib import Path

from harness.memory.progress import Progress
from harness.memory.run_state import RunState, without_run_state
from harness.memory.text_fields import Section


def test_written_state_reads_back_after_a_save(tmp_path: Path) -> None:
    progress = Progress(name="demo", extra=[Section(heading="Decisions", body="keep it")])
    pins = (("/w/loop.toml", "ab" * 32), ("/w/my checks/gate.py", "cd" * 32))
    state = RunState(
        branch="harness/demo-1a2b3c4d", worktree="/w", base="abc", head="def", pins=pins
    )

    state.write(progress)
    progress.save(tmp_path / "progress.md")
    again = Progress.load(tmp_path / "progress.md")

    assert RunState.read(again) == state
    assert [s.heading for s in again.extra] == ["Decisions", "Run"]


def test_a_hand_edited_heading_and_labels_still_read() -> None:
    progress = Progress.parse(
        "# Progress: demo\n\n## run:\n\nbranch : harness/demo-1\nWORKTREE: /w\nBase: abc\n"
    )

    assert RunState.read(progress) == RunState(branch="harness/demo-1", worktree="/w", base="abc")


def test_write_replaces_a_hand_edited_run_section_instead_of_adding_one() -> None:
    progress = Progress.parse("# Progress: demo\n\n## Run:\n\nBranch: old\n\n## Notes:\n\nn\n")

    RunState(branch="new", head="h").write(progress)

    assert [s.heading for s in progress.extra] == ["Run"]
    assert RunState.read(progress) == RunState(branch="new", head="h")


def test_an_empty_state_removes_the_section_and_reads_as_nothing() -> None:
    progress = Progress(name="demo")
    RunState(branch="b").write(progress)

    RunState().write(progress)

    assert progress.extra == []
    assert RunState.read(progress) == RunState()


def test_the_copy_without_run_state_keeps_every_other_section_and_leaves_the_original() -> None:
    progress = Progress.parse(
        "# Progress: demo\n\n## Decisions\n\nkeep it\n\n## run:\n\nBranch: b\nBase: abc\n"
    )

    shown = without_run_state(progress)

    assert [s.heading for s in shown.extra] == ["Decisions"]
    assert RunState.read(shown) == RunState()
    assert RunState.read(progress) == RunState(branch="b", base="abc")
