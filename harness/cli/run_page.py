"""A run's HTML report written to a file: ``harness report RUN --html FILE``, and each task's page
beside a batch's (``harness report BATCH --html FILE``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.cli.exit_codes import SYSTEM_ERRNOS
from harness.core.errors import ConfigError
from harness.observe.report_html import render_html
from harness.observe.run_summary import RunSummary
from harness.observe.trajectory import TRAJECTORY_FILE, Trajectory

WORK_CHARS = 100_000
"""The most of the run branch's diff a page shows."""


def write_page(path: Path, folder: Path, summary: RunSummary) -> None:
    """Write the report of the run in ``folder`` (``summary``) to ``path``: its trajectory when
    it recorded one, its work while its branch is there."""
    trajectory = Trajectory.load(folder) if (folder / TRAJECTORY_FILE).is_file() else None
    write_html(path, render_html(summary, trajectory, work=work(folder, summary)))


def write_html(path: Path, page: str) -> None:
    """Write ``page`` to ``path``: a full disk is the machine's trouble (exit 1), a path that
    cannot be written the user's (exit 2, naming ``--html``)."""
    try:
        path.write_text(page, encoding="utf-8")
    except OSError as exc:
        if exc.errno in SYSTEM_ERRNOS:
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise ConfigError(f"--html {path}: cannot write: {exc.strerror}") from exc


def work(folder: Path, summary: RunSummary) -> str | None:
    """The run branch's diff against its base, from the repository holding the run's folder
    (None when it holds no such branch). The branch is named by the record, so only a name of
    this run's own shape is looked up; the diff is redacted as its loop redacts (None when that
    loop's loop.toml cannot be read) and cut at :data:`WORK_CHARS`."""
    from harness.workspace.cleanup import top_of
    from harness.workspace.git import is_run_branch
    from harness.workspace.git_cmd import GitIsolationError
    from harness.workspace.round_refs import run_diff
    from harness.workspace.workspace import truncate_diff

    branch, repo = summary.branch, top_of(folder)
    if branch is None or repo is None or folder.name != summary.run_id:
        return None
    if not is_run_branch(branch, summary.run_id):
        return None
    redact = _loop_redactor(folder)
    if redact is None:
        return None
    try:
        diff = run_diff(repo, branch)
    except GitIsolationError:  # the report goes on without it
        return None
    return None if diff is None else truncate_diff(redact(diff), WORK_CHARS)


def _loop_redactor(folder: Path) -> Callable[[str], str] | None:
    """The redactor of the loop whose runs folder holds ``folder``: its loop.toml's ``[redact]``
    and ``.env`` values on top of the secrets found by default (that file is the user's; the
    record is never asked where its config is). None when that loop.toml cannot be read: a
    secret it names could not be kept out."""
    from harness.core.redact import Redactor
    from harness.spec import CONFIG_NAME, LoopSpec

    config = folder.parent.parent.parent / CONFIG_NAME
    if not config.is_file():
        return Redactor().redact_text
    try:
        return LoopSpec.from_toml(config).redactor().redact_text
    except ConfigError:
        return None
