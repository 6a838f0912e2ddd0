"""A restarted example starts clean: a model that writes nothing never passes on an earlier run's
work, and nothing a model writes lands outside the example's ignored ``.harness/`` folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.memory.progress import Progress
from harness.memory.progress_terms import Status
from tests.cli.test_cli import harness
from tests.cli.test_examples import commit_copy, copy_example, of_kind, read_events
from tests.conftest import git, verdict_entry

pytestmark = pytest.mark.slow

WORK = {"content": ".harness/work/draft.md", "research": ".harness/work/findings.md"}


def writes_nothing(tmp_path: Path) -> str:
    script = tmp_path / "writes-nothing.json"
    script.write_text(json.dumps({"rounds": {"1": ["I wrote hello.txt.", verdict_entry(10)]}}))
    return f"scripted:{script}"


@pytest.mark.parametrize("name", ["content", "research", "bugfix"])
def test_a_restarted_example_never_passes_on_the_work_of_an_earlier_run(
    tmp_path: Path, name: str
) -> None:
    example = copy_example(name, tmp_path)
    commit_copy(example)
    first = harness("run", "--quiet", str(example), cwd=tmp_path)
    assert first.returncode == 0, first.stdout
    for attempt in (1, 2):
        again = harness(
            "run", "--restart", "--model", writes_nothing(tmp_path), "--max-iterations", "1",
            str(example), cwd=tmp_path,
        )  # fmt: skip
        assert again.returncode == 3, (attempt, again.stdout, again.stderr)
        assert again.stdout.startswith("MAX_ITERATIONS:")
        progress = Progress.load(example / ".harness" / "progress" / f"{name}.md")
        assert progress.status is Status.ESCALATED
        if name in WORK:
            work = example / WORK[name]
            assert not work.exists()
            assert work.with_name(work.stem + ".previous.md").is_file()
            assert (f"note: set {work} aside" in again.stderr) is (attempt == 1)
    assert git(example, "status", "--porcelain", "--untracked-files=all") == ""


@pytest.mark.parametrize("name", ["content", "research"])
def test_a_model_cannot_leave_a_file_outside_the_ignored_folder(tmp_path: Path, name: str) -> None:
    example = copy_example(name, tmp_path)
    commit_copy(example)
    round_1 = [
        {"name": "write_file", "arguments": {"path": "hello.txt", "content": "hi"}},
        {"name": "write_file", "arguments": {"path": WORK[name], "content": "hi"}},
        "Done.",
    ]
    script = tmp_path / "hello.json"
    script.write_text(json.dumps({"rounds": {"1": round_1}}))
    result = harness(
        "run", "--quiet", "--model", f"scripted:{script}", "--max-iterations", "1",
        str(example), cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 3, result.stderr
    (refused, allowed) = of_kind(read_events(example), "tool_call")
    assert refused["is_error"] is True
    assert allowed["is_error"] is False
    assert not (example / "hello.txt").exists()
    assert (example / WORK[name]).read_text() == "hi"
    assert git(example, "status", "--porcelain", "--untracked-files=all") == ""


def test_a_file_left_outside_the_work_folder_by_the_shell_fails_the_round(tmp_path: Path) -> None:
    example = copy_example("content", tmp_path)
    commit_copy(example)
    round_1 = [{"name": "run_shell", "arguments": {"command": "echo hi > hello.txt"}}, "Done."]
    script = tmp_path / "shell.json"
    script.write_text(json.dumps({"rounds": {"1": round_1}}))
    result = harness(
        "run", "--quiet", "--model", f"scripted:{script}", "--max-iterations", "1",
        str(example), cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 3
    (end,) = of_kind(read_events(example), "round_end")
    assert end["outcome"] == "failed: protected files changed"
