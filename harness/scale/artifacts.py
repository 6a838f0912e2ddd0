"""What a finished loop produced, as bounded text: the content of the files it changed or named.

The files are read from the run's branch when it ran on one (the worktree may be gone), else
from the workspace. Each file is cut at ``per_file`` characters and the whole at ``total``, with
a stated marker, so a synthesis request stays bounded however much a subtask wrote.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from harness.core.text import truncate
from harness.outer.result import RunResult
from harness.workspace.git_cmd import run_git

PER_FILE_CHARS = 4_000
TOTAL_CHARS = 12_000


def run_artifacts(
    workspace: Path,
    result: RunResult,
    *,
    files: Sequence[str] = (),
    per_file: int = PER_FILE_CHARS,
    total: int = TOTAL_CHARS,
) -> str:
    """``files`` (default: every file the run changed) as ``--- path ---`` sections."""
    names = list(files) or (list(result.rounds[-1].files_changed) if result.rounds else [])
    sections = []
    for name in names:
        content = _read(workspace, result.branch, name)
        body = "(missing)" if content is None else truncate(content, per_file)
        sections.append(f"--- {name} ---\n{body}")
    return truncate("\n".join(sections), total, head_share=1.0)


def _read(workspace: Path, branch: str | None, name: str) -> str | None:
    if branch:
        proc = run_git(workspace, ("show", f"{branch}:./{name}"), None)
        return proc.stdout if proc.returncode == 0 else None
    path = workspace / name
    try:
        return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None
    except OSError:
        return None
