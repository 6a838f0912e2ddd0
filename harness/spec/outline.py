"""What a loop.toml says of where its loop stands, read without validating the rest of it.

``harness status`` (and the commands that find loops as it does) need a loop's name, its
progress file and its folder: :class:`LoopOutline` reads those and checks them as
:class:`~harness.spec.LoopSpec` does, naming the file and field. It imports neither pydantic nor
the spec's sections, whose import and schema building cost several times what the whole command
may take; the other fields are checked where they are used (``harness run``, ``harness clean``).
The file reading and the progress file's place are defined here once, and ``LoopSpec`` uses them.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core.errors import ConfigError
from harness.outer.loop_name import DEFAULT_LOOP_NAME, LOOP_NAME_PATTERN

CONFIG_NAME = "loop.toml"
_NAME = re.compile(LOOP_NAME_PATTERN)


@dataclass(frozen=True)
class LoopOutline:
    """A loop.toml's ``name`` and ``progress``, and the file they were read from."""

    name: str
    progress: str | None
    file: Path

    @property
    def root(self) -> Path:
        """The loop.toml's folder, where its relative paths start."""
        return self.file.parent.resolve()

    @classmethod
    def from_toml(cls, path: str | Path) -> LoopOutline:
        """The outline of ``path`` (a loop.toml, or a folder holding one); a file that is not
        TOML, or whose ``name`` or ``progress`` is wrong, raises :class:`ConfigError`."""
        file = find_config(path)
        data = read_toml(file)
        name = data.get("name", DEFAULT_LOOP_NAME)
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ConfigError(
                f"{file}: field 'name': should be a string matching {LOOP_NAME_PATTERN!r},"
                f" not {name!r}"
            )
        progress = data.get("progress")
        if progress is not None and not isinstance(progress, str):
            raise ConfigError(f"{file}: field 'progress': should be a string, not {progress!r}")
        return cls(name, progress, file)

    def progress_path(self) -> Path:
        return progress_path(self.root, self.name, self.progress)


def progress_path(root: Path, name: str, progress: str | None) -> Path:
    """A loop's progress file: ``progress`` (relative to ``root``), else ``progress/NAME.md``."""
    return root / (progress or f"progress/{name}.md")


def find_config(path: str | Path) -> Path:
    """``path`` itself if it is a file, else ``path/loop.toml``."""
    path = Path(path)
    candidate = path / CONFIG_NAME if path.is_dir() else path
    if not candidate.is_file():
        raise ConfigError(
            f"{candidate}: no such file (expected a {CONFIG_NAME} or a folder holding one)"
        )
    return candidate


def read_toml(file: Path) -> dict[str, Any]:
    """The table in ``file``; a file that cannot be read as TOML raises :class:`ConfigError`."""
    try:
        return tomllib.loads(file.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file}: not valid TOML: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{file}: not UTF-8 text (byte {exc.start} is {exc.object[exc.start]:#04x}); "
            "save it as UTF-8"
        ) from None
    except RecursionError:
        raise ConfigError(f"{file}: nested too deeply to read") from None
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read: {exc.strerror}") from exc
