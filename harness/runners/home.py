"""The private home and scratch folder of an external agent's session: the files a runner writes
there before the agent starts, the output and answer files read back after it ends (never through
a link the agent planted), and the folder's removal."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from harness.core import held_folders
from harness.core.errors import ConfigError
from harness.core.nofollow import UnsafePath, read_bytes

OUTPUT_CHARS = 200_000
"""How much of the end of an agent's stdout and stderr is kept."""
REMOVE_TRIES = 5
"""Removals of a session's scratch folder tried before it is left to the system's cleaning."""


def remove_scratch(folder: Path) -> None:
    """Remove the session's scratch folder. What the agent started may still be ending (its
    last writes into its HOME landing) when its program has exited, so a removal that finds a
    file made meanwhile is tried again; what still cannot be removed stays in the temporary
    folder rather than failing the round (held until this process ends, then ``harness
    clean``'s)."""
    for _ in range(REMOVE_TRIES - 1):
        try:
            shutil.rmtree(folder)
            break
        except FileNotFoundError:
            break
        except OSError:
            time.sleep(0.1)
    held_folders.remove(folder)


def home_file(home: Path, name: str) -> str | None:
    """The text of the file ``name`` the agent left in its ``home`` (undecodable bytes
    replaced); None when it is missing, or not a regular file reached without a link: the
    agent wrote its home, so a link there would make the harness read whatever it points to."""
    try:
        return read_bytes(home / name, root=home).decode(errors="replace")
    except (OSError, UnsafePath):
        return None


def tail(path: Path) -> str:
    """The last :data:`OUTPUT_CHARS` of the file at ``path`` (bytes read only from there)."""
    with path.open("rb") as file:
        size = file.seek(0, os.SEEK_END)
        file.seek(max(size - OUTPUT_CHARS, 0))
        return file.read().decode(errors="replace")


def write_files(home: Path, files: dict[str, str]) -> None:
    """Write each of ``files`` under ``home``; a path leading out of it is a bug of the runner."""
    for name, text in files.items():
        target = (home / name).resolve()
        if not target.is_relative_to(home.resolve()):
            raise ConfigError(f"files: {name!r} lies outside the agent's home")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
