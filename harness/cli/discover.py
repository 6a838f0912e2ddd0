"""Finding the loops under a path: by their ``loop.toml`` files and by their progress files.

Used by ``harness status`` and ``harness clean``, and (through
:func:`harness.cli.run_folders.run_folders`) by ``harness runs`` and ``harness report``, so all
four find the same loops. A loop.toml or progress file
that cannot be read is reported with the reason, never a reason to stop looking. A loop.toml is
read for its outline only (:class:`~harness.spec.outline.LoopOutline`: name, progress file,
folder), so finding loops imports no pydantic; a command that acts on a loop reads its whole spec.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from harness.core.errors import ConfigError
from harness.spec.outline import CONFIG_NAME, LoopOutline

SET_ASIDE = (".escalation.md", ".previous.md", ".sample.md")
"""Suffixes of files beside a progress file that are not progress files themselves: an
escalation report, a file set aside by a restart, a sample shipped to read (progress/)."""

_SKIPPED = frozenset({"node_modules", "__pycache__", "site-packages"})


@dataclass(frozen=True)
class FoundLoop:
    """A loop found under the path: its progress file, and its loop.toml when it has one."""

    progress: Path
    config: LoopOutline | None = None


@dataclass(frozen=True)
class Unreadable:
    """A loop.toml or progress file that could not be read, and why."""

    path: Path
    reason: str


def find_loops(path: str | Path) -> tuple[list[FoundLoop], list[Unreadable]]:
    """The loops at or under ``path``, and the files that looked like loops but cannot be read.

    ``path`` may be a loop.toml, a progress file, a folder holding a loop.toml, a folder of
    progress files, or any folder: then every loop.toml below it (hidden folders, virtual
    environments and ``node_modules`` skipped) and every ``progress/`` folder's files count.
    Markdown files directly in ``path`` count only when they parse as progress files, and a
    ``README.md`` never counts, so neither is mistaken for a broken loop. Raises :class:`ConfigError` when ``path``
    does not exist.
    """
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: no such file or folder")
    if path.is_file() and path.suffix == ".md":
        return [FoundLoop(path)], []
    if path.is_file() or (path / CONFIG_NAME).is_file():
        config = LoopOutline.from_toml(path)
        return [FoundLoop(config.progress_path(), config)], []
    loops: list[FoundLoop] = []
    unreadable: list[Unreadable] = []
    seen: set[Path] = set()
    below = list(_folders(path))
    for config_file in [d / CONFIG_NAME for d in below if (d / CONFIG_NAME).is_file()]:
        try:
            config = LoopOutline.from_toml(config_file)
        except ConfigError as exc:
            unreadable.append(Unreadable(config_file, str(exc)))
            continue
        found = FoundLoop(config.progress_path(), config)
        seen.add(found.progress.resolve())
        loops.append(found)
    folders = [path / "progress", *(d / "progress" for d in below if d != path)]
    for folder in dict.fromkeys([path, *folders]):
        if not folder.is_dir():
            continue
        for file in sorted(folder.glob("*.md")):
            if file.name.endswith(SET_ASIDE) or file.resolve() in seen:
                continue
            if file.stem.lower() == "readme":  # a folder's own description, not a loop
                continue
            seen.add(file.resolve())
            if folder == path and folder.name != "progress" and not _is_progress(file):
                continue  # a README beside loops is not a loop
            loops.append(FoundLoop(file))
    return loops, unreadable


def _is_progress(file: Path) -> bool:
    from harness.memory.progress import Progress

    try:
        Progress.load(file)
    except (ConfigError, OSError):
        return False
    return True


def _folders(top: Path) -> Iterator[Path]:
    """``top`` and the folders below it worth searching for loops."""
    for folder, subfolders, files in os.walk(top):
        if "pyvenv.cfg" in files:  # a virtual environment
            subfolders[:] = []
            continue
        subfolders[:] = sorted(
            name for name in subfolders if not name.startswith(".") and name not in _SKIPPED
        )
        yield Path(folder)
