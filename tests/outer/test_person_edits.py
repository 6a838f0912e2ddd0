"""A person's edit between rounds is told to the next round, and survives it."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import Agent, CommandGate, Critic, OuterLoop, RunResult, ScriptedModel, ToolCall
from harness.outer.decision import RoundReport
from harness.outer.options import ArtifactFile
from tests.conftest import git, make_repo, verdict_call

DRAFT = "# Title\n\nintro\n\nmiddle\n\nend\n"
PERSON = "# Title\n\nintro\n\nmiddle\n\nend, as a person wrote it\n"
UNDONE = "# Title\n\nintro, improved\n\nmiddle\n\nend\n"  # the agent's rewrite drops the edit
MERGED = "# Title\n\nintro, improved\n\nmiddle\n\nend, as a person wrote it\n"


def run_rounds(
    folder: Path, isolation: str, second: str, edit: str | None
) -> tuple[RunResult, ScriptedModel]:
    """Two rounds writing the draft; after round 1 a person writes ``edit`` into it."""

    def person(report: RoundReport) -> None:
        if report.round == 1 and edit is not None:
            (folder / "draft.md").write_text(edit)

    author = ScriptedModel(
        [
            ToolCall("write_file", {"path": "draft.md", "content": DRAFT}),
            "done",
            ToolCall("write_file", {"path": "draft.md", "content": second}),
            "done",
        ]
    )
    return OuterLoop(
        "write the draft",
        Agent(author),
        gates=[CommandGate("test -s draft.md", name="draft")],
        critic=Critic(ScriptedModel([verdict_call(5), verdict_call(6)])),
        max_iterations=2,
        workspace=folder,
        isolation=isolation,  # type: ignore[arg-type]
        on_round=person,
        critic_artifact=ArtifactFile("draft.md"),
    ).run(), author


def workspace(tmp_path: Path, isolation: str) -> Path:
    """A plain folder, or a repository whose own checkout the run works in (``branch``)."""
    if isolation == "branch":
        return make_repo(tmp_path / "work", {"README.md": "x\n"})
    (tmp_path / "work").mkdir()
    return tmp_path / "work"


@pytest.mark.parametrize("isolation", ["none", "branch"])
def test_a_persons_edit_survives_a_round_that_rewrites_the_draft(
    tmp_path: Path, isolation: str
) -> None:
    folder = workspace(tmp_path, isolation)
    result, author = run_rounds(folder, isolation, UNDONE, PERSON)
    assert (folder / "draft.md").read_text() == MERGED
    assert [r.restored_edits for r in result.rounds] == [(), ("draft.md",)]
    task = author.calls[2].messages[1]["content"]
    assert "# A person's edits since the last round" in task
    assert "-end\n+end, as a person wrote it\n" in task
    assert "A person's edits" not in author.calls[0].messages[1]["content"]
    if isolation == "branch":  # the round's commit holds the kept edit
        assert git(folder, "show", "HEAD:draft.md") + "\n" == MERGED


@pytest.mark.parametrize("isolation", ["none", "branch"])
def test_a_round_that_keeps_the_edit_has_nothing_put_back(tmp_path: Path, isolation: str) -> None:
    folder = workspace(tmp_path, isolation)
    result, author = run_rounds(folder, isolation, MERGED, PERSON)
    assert (folder / "draft.md").read_text() == MERGED
    assert [r.restored_edits for r in result.rounds] == [(), ()]
    assert "# A person's edits since the last round" in author.calls[2].messages[1]["content"]


@pytest.mark.parametrize("isolation", ["none", "branch"])
def test_without_an_edit_the_round_is_told_nothing_and_its_rewrite_stands(
    tmp_path: Path, isolation: str
) -> None:
    folder = workspace(tmp_path, isolation)
    result, author = run_rounds(folder, isolation, UNDONE, None)
    assert (folder / "draft.md").read_text() == UNDONE
    assert [r.restored_edits for r in result.rounds] == [(), ()]
    assert "A person's edits" not in author.calls[2].messages[1]["content"]


def test_a_file_the_person_removed_stays_removed(tmp_path: Path) -> None:
    folder = workspace(tmp_path, "none")

    def person(report: RoundReport) -> None:
        if report.round == 1:
            (folder / "notes.md").unlink()

    write = [
        ToolCall("write_file", {"path": "draft.md", "content": DRAFT}),
        ToolCall("write_file", {"path": "notes.md", "content": "scratch\n"}),
        "done",
    ]
    result = OuterLoop(
        "write the draft",
        Agent(ScriptedModel([*write, *write])),
        critic=Critic(ScriptedModel([verdict_call(5), verdict_call(6)])),
        max_iterations=2,
        workspace=folder,
        isolation="none",
        on_round=person,
    ).run()
    assert not (folder / "notes.md").exists()
    assert result.rounds[1].restored_edits == ("notes.md",)


def resume(folder: Path, script: list[object], cap: int) -> tuple[RunResult, ScriptedModel]:
    """A run of a loop outside git with a progress file, up to round ``cap``."""
    author = ScriptedModel(script)
    result = OuterLoop(
        "write the draft",
        Agent(author),
        critic=Critic(ScriptedModel([verdict_call(5)])),
        progress=folder.parent / "progress.md",
        max_iterations=cap,
        workspace=folder,
        isolation="none",
    ).run()
    return result, author


def test_an_edit_between_two_runs_outside_git_is_kept_by_the_resumed_round(
    tmp_path: Path,
) -> None:
    folder = workspace(tmp_path, "none")
    first, _ = resume(
        folder, [ToolCall("write_file", {"path": "draft.md", "content": DRAFT}), "done"], 1
    )
    assert first.iterations == 1
    (folder / "draft.md").write_text(PERSON)  # the person edits while no process runs
    later, author = resume(
        folder, [ToolCall("write_file", {"path": "draft.md", "content": UNDONE}), "done"], 2
    )
    assert later.first_round == 2
    assert (folder / "draft.md").read_text() == MERGED
    assert later.rounds[0].restored_edits == ("draft.md",)
    assert "+end, as a person wrote it\n" in author.calls[0].messages[1]["content"]


def test_what_a_round_cut_short_left_is_not_taken_for_a_persons_edit(tmp_path: Path) -> None:
    folder = workspace(tmp_path, "none")
    write = ToolCall("write_file", {"path": "draft.md", "content": DRAFT})
    partial = ToolCall("write_file", {"path": "draft.md", "content": "half of a rewrite\n"})
    cut, _ = resume(folder, [write, "done", partial], 2)  # round 2's script runs out mid-way
    assert (cut.stop_reason.value, cut.cut_short) == ("ERROR", 2)
    assert (folder / "draft.md").read_text() == "half of a rewrite\n"
    later, author = resume(folder, [write, "done"], 2)
    assert later.rounds[0].restored_edits == ()
    assert "A person's edits" not in author.calls[0].messages[1]["content"]
    assert (folder / "draft.md").read_text() == DRAFT
