"""Confinement: every path a tool touches stays inside the workspace, and protected files stay put.

Paths are resolved with symlinks followed, so a link whose target lies outside the workspace is
refused like ``../x`` is. The check happens when a tool runs; the open that follows walks the
resolved path without following symlinks (:mod:`harness.tools.confined_io`), so a link swapped
in between cannot lead outside. Nothing under ``.git`` and none of the harness's state in
``.harness`` (runs, progress, locks, escalation reports) is ever writable.

Protect patterns are globs relative to the workspace: ``*`` and ``?`` match within one path
segment, ``**`` spans directories (``tests/**``), and a pattern that names a directory covers
everything under it (``tests``). A pattern starting with ``!`` frees what it matches again, and
the last pattern that matches decides: ``["**", "!out/**"]`` protects everything but ``out/``.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Protocol

from harness.core.errors import ConfigError, ToolError
from harness.core.text import truncate


class Confined(Protocol):
    """What confinement needs to know of a tool's context: the root and the protected globs."""

    @property
    def workspace(self) -> Path: ...

    @property
    def protect(self) -> tuple[str, ...]: ...


SHOWN_CHARS = 200
"""How much of a model-supplied string an error message repeats."""


def shown(text: str) -> str:
    """``text`` quoted for an error message, cut short when the model sent something huge."""
    return repr(truncate(text, SHOWN_CHARS))


def resolve_in_workspace(ctx: Confined, path: str) -> Path:
    """``path`` (relative to the workspace, or absolute inside it) resolved, symlinks followed.

    Raises :class:`ToolError` when it, or the target of a symlink on the way, lies outside.
    """
    if "\0" in path:
        raise ToolError(f"path {shown(path)} contains a NUL byte")
    root = ctx.workspace
    plain = _plain_inside(root, path)
    if plain is not None:
        return plain
    candidate = root / (path or ".")  # an absolute ``path`` replaces the root
    try:
        resolved = candidate.resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Python < 3.13)
        raise ToolError(f"path {shown(path)} cannot be resolved: {exc}") from None
    if resolved.is_relative_to(root):
        return resolved
    lexical = Path(os.path.normpath(candidate))
    via_link = f" (a symlink on it leads to {resolved})" if lexical.is_relative_to(root) else ""
    raise ToolError(
        f"path {shown(path)} is outside the workspace{via_link}; "
        "use paths relative to the workspace root"
    )


def _plain_inside(root: Path, path: str) -> Path | None:
    """``root/path`` when ``path`` is relative, has no ``..`` and no symlink below ``root`` (the
    already resolved workspace), checked with one ``lstat`` per name; else None, and the caller
    resolves the whole path. The common case costs a few system calls, not a full resolve."""
    parts = [part for part in path.split("/") if part and part != "."]
    if path.startswith("/") or ".." in parts:
        return None
    here = str(root)
    for part in parts:
        here = os.path.join(here, part)
        try:
            if stat.S_ISLNK(os.lstat(here).st_mode):
                return None
        except FileNotFoundError:
            break  # nothing below a missing name exists, so no link either
        except OSError:  # a file used as a folder, a name too long: the full resolve says
            return None
    return root.joinpath(*parts)


def relative_path(ctx: Confined, path: Path) -> str:
    """``path`` (inside the workspace) as the POSIX path the model should use for it."""
    return path.relative_to(ctx.workspace).as_posix()


def writable(ctx: Confined, target: Path) -> str:
    """``target``'s relative path; :class:`ToolError` when a protect pattern covers it."""
    rel = relative_path(ctx, target)
    if is_state(rel):
        raise ToolError(
            f"{rel} is version-control or run state (.git, .harness/runs, .harness/progress, "
            "locks, escalation reports): the tools never write there"
        )
    pattern = protecting_pattern(ctx.protect, rel)
    if pattern is not None:
        raise ToolError(f"{rel} is protected (matches {pattern!r}): the checks rely on it")
    return rel


def is_state(rel: str) -> bool:
    """Whether ``rel`` lies in a ``.git`` folder or is the harness's own state in ``.harness``."""
    parts = rel.split("/")
    if ".git" in parts:
        return True
    if parts[0] != ".harness" or len(parts) < 2:
        return False
    return parts[1] in ("runs", "progress") or parts[-1].endswith((".lock", ".escalation.md"))


def protecting_pattern(patterns: Iterable[str], rel: str) -> str | None:
    """The first pattern that matches ``rel`` or a directory it lies in, unless a later ``!``
    pattern frees it again (then the first matching one after that, if any)."""
    parts = rel.split("/")
    covered = ["/".join(parts[:end]) for end in range(1, len(parts) + 1)]
    decided: str | None = None
    for pattern in patterns:
        negated = pattern.startswith("!")
        regex = _glob_regex(pattern.removeprefix("!"))
        if any(regex.fullmatch(candidate) for candidate in covered):
            decided = None if negated else decided or pattern
    return decided


def check_protect_patterns(patterns: Iterable[str]) -> tuple[str, ...]:
    """The patterns as a tuple; :class:`ConfigError` for one that cannot name workspace files."""
    checked = tuple(patterns)
    for pattern in checked:
        if not isinstance(pattern, str) or not _normalised(pattern.removeprefix("!")):
            raise ConfigError(f"protect: {pattern!r} is not a non-empty glob pattern")
        glob = PurePosixPath(pattern.removeprefix("!"))
        if glob.is_absolute() or ".." in glob.parts:
            raise ConfigError(f"protect: {pattern!r} must be relative to the workspace")
    return checked


def _normalised(pattern: str) -> str:
    return pattern.removeprefix("./").strip("/")


_GLOB_PARTS = {"**/": "(?:.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}


@lru_cache(maxsize=256)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    tokens = re.findall(r"\*\*/?|[*?]|[^*?]+", _normalised(pattern))
    return re.compile("".join(_GLOB_PARTS.get(t, re.escape(t)) for t in tokens), re.DOTALL)
