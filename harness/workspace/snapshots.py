"""Every round of a run outside git kept for good: a copy of the workspace's files per round.

Round ``N`` is kept in ``<folder>/<N>/``: ``files/`` holds the workspace's regular files as the
round left them (symlinks, ``.git`` and the excluded paths are not taken), ``round.json`` the
round's record (outcome, gates, critic score). The folder is out of the agent's reach (the
caller puts it in the user's state folder), so no round can forge another's snapshot.

Restoring a round first keeps the workspace's current files as ``<folder>/before-restore/``,
then removes the files the round did not have and writes back the ones it had: the workspace's
files are then exactly the round's.
"""

from __future__ import annotations

import difflib
import fnmatch
import json
import os
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.core.atomic import atomic_write_text
from harness.core.errors import BookkeepingError
from harness.workspace.caches import CACHE_PATTERNS

MAX_BYTES = 50 * 1024 * 1024
"""The most a snapshot copies; a workspace holding more is not kept (and says so)."""
RECORD = "round.json"
BEFORE_RESTORE = "before-restore"
CUT_SHORT = "cut-short"  # the number of a round stopped part-way, until a round completes
SKIPPED = (".git/", *CACHE_PATTERNS)


@dataclass(frozen=True)
class Snapshots:
    """The kept rounds of one loop working in ``workspace`` outside git."""

    folder: Path
    workspace: Path
    exclude: tuple[str, ...] = ()  # workspace-relative paths or globs (a folder ends with /)

    def files(self) -> dict[str, Path]:
        """The workspace's files a snapshot takes, by relative path (``/`` separated)."""
        found: dict[str, Path] = {}
        for top, dirs, names in os.walk(self.workspace):
            rel_top = Path(top).relative_to(self.workspace).as_posix()
            prefix = "" if rel_top == "." else rel_top + "/"
            dirs[:] = sorted(d for d in dirs if takes(prefix + d + "/", self.exclude))
            for name in sorted(names):
                path = Path(top) / name
                if takes(prefix + name, self.exclude) and path.is_file() and not path.is_symlink():
                    found[prefix + name] = path
        return found

    def take(self, number: int, record: Mapping[str, object]) -> bool:
        """Keep the workspace's files as round ``number`` with ``record``; False (and the record
        says why) when they are more than :data:`MAX_BYTES`."""
        files = self.files()
        size = sum(path.stat().st_size for path in files.values())
        target = self.folder / str(number)
        try:
            (self.folder / CUT_SHORT).unlink(missing_ok=True)
            _replace(target, files if size <= MAX_BYTES else {})
            kept = size <= MAX_BYTES
            note = (
                {} if kept else {"not_kept": f"the workspace holds {size} bytes, over {MAX_BYTES}"}
            )
            atomic_write_text(target / RECORD, json.dumps({**record, **note}, indent=2))
        except OSError as exc:
            raise BookkeepingError(f"the harness could not keep round {number}: {exc}") from exc
        return kept

    def note_cut_short(self, number: int) -> None:
        """Round ``number`` stopped part-way: what it left is its own work, not a person's."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            atomic_write_text(self.folder / CUT_SHORT, str(number))
        except OSError as exc:
            raise BookkeepingError(f"the harness could not note round {number}: {exc}") from exc

    def cut_short(self) -> int | None:
        """The round that stopped part-way since the last one kept, if one did."""
        path = self.folder / CUT_SHORT
        text = path.read_text(encoding="utf-8").strip() if path.is_file() else ""
        return int(text) if text.isdigit() else None

    def record(self, number: int) -> dict[str, object] | None:
        """Round ``number``'s record, or None when it was not kept; raises when it is unreadable."""
        path = self.folder / str(number) / RECORD
        if not path.is_file():
            return None
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise BookkeepingError(f"{path}: the round's record cannot be read: {exc}") from exc
        if not isinstance(loaded, dict):
            raise BookkeepingError(f"{path}: the round's record is not a JSON object")
        return loaded

    def kept(self, number: int) -> dict[str, bytes]:
        """Round ``number``'s files by relative path; raises when it was not kept."""
        record = self.record(number)
        if record is None or "not_kept" in record:
            why = record.get("not_kept") if record else "no snapshot"
            raise BookkeepingError(f"round {number} was not kept in {self.folder}: {why}")
        root = self.folder / str(number) / "files"
        return {
            path.relative_to(root).as_posix(): path.read_bytes()
            for path in sorted(root.rglob("*"))
            if path.is_file()
        }

    def restore(self, number: int) -> None:
        """Make the workspace's files exactly round ``number``'s (the current ones kept first)."""
        wanted = self.kept(number)
        current = self.files()
        _replace(self.folder / BEFORE_RESTORE, current)
        for rel, path in current.items():
            if rel not in wanted:
                path.unlink()
        for rel, data in wanted.items():
            target = self.workspace / rel
            _refuse_links(self.workspace, target.parent)
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_symlink():
                target.unlink()
            target.write_bytes(data)

    def diff(self, first: int, second: int) -> str:
        """A unified diff from round ``first``'s files to round ``second``'s (text files; a
        binary file is named, not shown)."""
        old, new = self.kept(first), self.kept(second)
        return "".join(_diff(old, new, first, second))


def takes(rel: str, exclude: tuple[str, ...] = ()) -> bool:
    """Whether a snapshot takes the workspace's path ``rel`` (a folder's ends with ``/``): not in
    ``.git``, a cache or ``exclude`` (paths or globs; a folder's ends with ``/``)."""
    parts = rel.rstrip("/").split("/")
    folders = [f"{'/'.join(parts[: i + 1])}/" for i in range(len(parts) - 1)]
    if rel.endswith("/"):
        folders.append(rel)
    for pattern in (*SKIPPED, *exclude):
        if pattern.endswith("/"):
            if any(f == pattern or f.endswith("/" + pattern) for f in folders):
                return False
        elif fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(parts[-1], pattern):
            return False
    return True


def _diff(
    old: Mapping[str, bytes], new: Mapping[str, bytes], first: int, second: int
) -> Iterator[str]:
    for rel in sorted(set(old) | set(new)):
        before, after = old.get(rel), new.get(rel)
        if before == after:
            continue
        try:
            a = (before or b"").decode().splitlines(keepends=True)
            b = (after or b"").decode().splitlines(keepends=True)
        except UnicodeDecodeError:
            yield f"binary file {rel} differs\n"
            continue
        yield from difflib.unified_diff(a, b, f"round {first}/{rel}", f"round {second}/{rel}")


def _refuse_links(workspace: Path, folder: Path) -> None:
    """A restore writes nowhere a link leads: no folder on the way may be a symlink."""
    for part in (folder, *folder.parents):
        if part == workspace or not part.is_relative_to(workspace):
            return
        if part.is_symlink():
            raise BookkeepingError(f"{part} is a symlink; the restore writes through no link")


def _replace(target: Path, files: Mapping[str, Path]) -> None:
    """``target/files/`` made to hold exactly ``files`` (copied)."""
    if target.exists():
        shutil.rmtree(target)
    root = target / "files"
    root.mkdir(parents=True)
    for rel, source in files.items():
        destination = root / rel
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, destination)
