"""The harness's own state is out of the tools' reach, whatever the protect patterns say."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.core.errors import ToolError
from harness.tools.paths import is_state, writable
from harness.tools.toolkit import ToolContext

STATE = (
    ".git", ".git/config", "sub/.git/HEAD", "vendor/lib/.git", ".harness/runs",
    ".harness/runs/r1/events.jsonl", ".harness/progress", ".harness/progress/loop.md",
    ".harness/loop.lock", ".harness/deep/x.lock", ".harness/loop.escalation.md",
)  # fmt: skip
NOT_STATE = (
    ".gitignore", ".github/workflows/ci.yml", "git/.gitkeep", "src/.git.py", ".harness",
    ".harness/work/notes.md", ".harness/runs.md", ".harness/progress.txt", ".harness/lock",
    ".harness/loop.lock.bak", "runs/x.lock", "progress/loop.md", "docs/.harness/runs/x",
    ".harness/escalation.md.txt", "x.escalation.md",
)  # fmt: skip


@pytest.mark.parametrize("rel", STATE)
def test_version_control_and_run_state_are_state(rel: str) -> None:
    assert is_state(rel) is True


@pytest.mark.parametrize("rel", NOT_STATE)
def test_the_workspaces_own_files_are_not_state(rel: str) -> None:
    assert is_state(rel) is False


def test_state_is_refused_before_the_protect_patterns_are_read(tmp_path: Path) -> None:
    ctx = ToolContext(workspace=tmp_path, protect=("!.harness/**",))
    for rel in (".git/hooks/pre-commit", ".harness/progress/loop.md"):
        with pytest.raises(ToolError) as refused:
            writable(ctx, tmp_path / rel)
        assert str(refused.value) == (
            f"{rel} is version-control or run state (.git, .harness/runs, .harness/progress, "
            "locks, escalation reports): the tools never write there"
        )
    assert writable(ctx, tmp_path / ".harness" / "work" / "notes.md") == ".harness/work/notes.md"
