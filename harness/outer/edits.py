"""A person's edits between rounds: told to the next round, and kept from being undone.

When a round starts, the workspace's files are compared with how the last round left them (in
git: its last commit; outside git: the last round's snapshot, :mod:`harness.outer.keep`). Any
difference was made outside the agent — a person's edit. The round's task shows it as a diff,
and once the session ends, every file the person edited is merged three ways (the last round's
text, the person's, the agent's), the person's side winning wherever the two touch the same
lines (``git merge-file --theirs``). What the agent added elsewhere stays; any part of the
person's edit the agent removed or rewrote is put back, and the round's report names the file.
A file the person removed is removed again. Text files only: a binary file is told, not merged.
"""

from __future__ import annotations

import contextlib
import difflib
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness.core.errors import BookkeepingError
from harness.outer.keep import harness_paths, run_snapshots
from harness.outer.run import Run
from harness.workspace.checkout import file_at, prefix_of
from harness.workspace.git_cmd import git, run_git
from harness.workspace.round_refs import uncommitted
from harness.workspace.snapshots import takes
from harness.workspace.workspace import truncate_diff

EDITS_SHOWN_CHARS = 8_000
"""How much of a person's edits the next round's task shows; more is cut with a marker."""


@dataclass(frozen=True)
class PersonEdit:
    """One file as the last round left it and as a person left it (None: absent)."""

    path: str  # relative to the workspace
    before: str | None
    after: str | None
    binary: bool = False  # either side is not UTF-8 text: told, not merged


def person_edits(run: Run, number: int) -> tuple[PersonEdit, ...]:
    """What changed in the workspace since round ``number - 1`` ended, outside the agent."""
    if number <= 1:
        return ()
    workspace = run.workspace
    progress_path = run.progress.path if run.progress else None
    own = harness_paths(workspace.path, progress_path)
    if workspace.branch is not None and workspace.root is not None:
        head = git(workspace.path, "rev-parse", "HEAD").strip()
        prefix = prefix_of(workspace.root, workspace.path)
        before = {
            rel: file_at(workspace.root, head, prefix + rel) for rel in uncommitted(workspace.path)
        }
        edits = [_edit(rel, text, workspace.path / rel) for rel, text in before.items()]
    else:
        kept = run_snapshots(run)
        if kept.cut_short() is not None:
            return ()
        try:
            old = kept.kept(number - 1)
        except BookkeepingError:  # not kept: nothing to compare with
            return ()
        now = {rel: path.read_bytes() for rel, path in kept.files().items()}
        edits = [
            PersonEdit(rel, _text(old.get(rel)), _text(now.get(rel)), binary=_binary(old, now, rel))
            for rel in sorted(set(old) | set(now))
            if old.get(rel) != now.get(rel)
        ]
    return tuple(e for e in edits if takes(e.path, own))  # never the harness's own files


def describe_edits(edits: tuple[PersonEdit, ...]) -> str:
    """The edits as the next round's task shows them: a unified diff, bounded."""
    parts = []
    for edit in edits:
        if edit.binary:
            parts.append(f"binary file {edit.path} changed\n")
            continue
        parts += difflib.unified_diff(
            (edit.before or "").splitlines(keepends=True),
            (edit.after or "").splitlines(keepends=True),
            f"a/{edit.path} (as the last round left it)",
            f"b/{edit.path} (as a person left it)",
        )
    return truncate_diff("".join(parts), EDITS_SHOWN_CHARS)


def keep_person_edits(workspace: Path, edits: tuple[PersonEdit, ...]) -> tuple[str, ...]:
    """Put back what the session undid of ``edits``; the files where it had to."""
    restored = []
    for edit in edits:
        path = workspace / edit.path
        ours = _read(path)
        if edit.binary or ours == edit.after or path.is_symlink():
            continue
        if edit.after is None:  # the person removed it; the agent brought it back
            path.unlink()
            restored.append(edit.path)
            continue
        merged = _merge(edit.before or "", ours or "", edit.after)
        if merged != ours:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(merged, encoding="utf-8")
            restored.append(edit.path)
    return tuple(restored)


def _merge(base: str, ours: str, theirs: str) -> str:
    """A three-way merge of ``ours`` and ``theirs`` from ``base``, ``theirs`` winning conflicts."""
    with tempfile.TemporaryDirectory(prefix="harness-merge-") as tmp:
        folder = Path(tmp)
        for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
            (folder / name).write_text(text, encoding="utf-8")
        proc = run_git(folder, ("merge-file", "-p", "--theirs", "ours", "base", "theirs"), None)
        if proc.returncode < 0 or proc.returncode > 127:
            raise BookkeepingError(f"the harness could not merge a person's edit: {proc.stderr}")
        return proc.stdout


def _edit(rel: str, before: str | None, path: Path) -> PersonEdit:
    after = _read(path)
    return PersonEdit(rel, before, after, binary=after is None and path.exists())


def _binary(old: dict[str, bytes], now: dict[str, bytes], rel: str) -> bool:
    return any(rel in side and _text(side[rel]) is None for side in (old, now))


def _read(path: Path) -> str | None:
    if not path.is_file() or path.is_symlink():
        return None
    return _text(path.read_bytes())


def _text(data: bytes | None) -> str | None:
    with contextlib.suppress(UnicodeDecodeError):
        return None if data is None else data.decode("utf-8")
    return None
