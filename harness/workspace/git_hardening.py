"""The ``-c`` options that keep git from running a program of the repository's choosing.

Every git call the harness makes carries them: a repository (or an agent that wrote into its
``.git``) must not get the harness to run code with the harness's environment. Most are fixed
(:data:`_HARDENING`, which also keeps a commit or a merge from starting git's housekeeping,
``git maintenance run --auto``: that is for the repository's owner to run, not each harness
call); the drivers a repository's config names (``filter.X.clean``,
``diff.X.textconv``, ...) are read from its config, which costs a ``git config`` process. That
reading is done once per repository and kept while nothing it depends on changes: the options
are reused only when the same environment reaches the same git directory and every config file
git read (system, global, the repository's, the worktree's, every include, named or not yet
existing) has the same inode, size and times as when they were read. A file written so recently
that a later write could leave those unchanged (within the file system's timestamp tick) is read
again next time, as git does for a racily clean index; so is a config that includes a file by
``~user/`` or ``%(prefix)/``, forms not followed here.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

_HARDENING = (
    "core.fsmonitor=false", "core.hooksPath=/dev/null", "core.sshCommand=false",
    "core.pager=cat", "core.editor=false", "sequence.editor=false", "core.askPass=false",
    "credential.helper=", "commit.gpgSign=false", "tag.gpgSign=false",
    "gpg.program=false", "protocol.ext.allow=never", "uploadpack.packObjectsHook=",
    "maintenance.auto=false", "gc.auto=0",
)  # fmt: skip
_FIXED = tuple(part for setting in _HARDENING for part in ("-c", setting))
# Named drivers the repository's config may define (filter=X, diff=X in .gitattributes), and the
# harmless program each command key of theirs is replaced with ("" never starts).
_DRIVER_KEY = re.compile(
    r"^(filter|diff|merge)\.(.+)\.(clean|smudge|process|textconv|command|driver)$"
)
_SAFE_DRIVER = {"clean": "cat", "smudge": "cat", "textconv": "cat", "process": "",
                "command": "false", "driver": "false"}  # fmt: skip
_INCLUDE_KEY = re.compile(r"^include(if\.(.+))?\.path$", re.IGNORECASE)
# Variables that decide nothing about which config git reads; every other GIT_* one may.
_NOT_CONFIG = frozenset({
    "GIT_INDEX_FILE", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE",
})  # fmt: skip
RACY_NS = 20_000_000
"""A config file written this close (ns) before it was read is read again on the next call."""
_KEPT = 256  # repositories remembered; the oldest is forgotten first

Signature = tuple[tuple[int, int, int, int] | None, ...]


@dataclass(frozen=True)
class _Read:
    files: tuple[Path, ...]
    signature: Signature
    options: tuple[str, ...]


_cache: dict[tuple[object, ...], _Read] = {}
_cache_lock = threading.Lock()


NO_DRIVERS = frozenset({
    "config", "rev-parse", "update-ref", "symbolic-ref", "for-each-ref", "merge-base",
    "ls-tree",
})  # fmt: skip
"""Commands that never pass a file's content through a driver (they read and write refs, config
and objects only): they carry the fixed options alone, and no config is read for them. Not
``write-tree``: writing the index back, it hashes again the files of racily clean entries (an
index written a moment ago), through their clean filter."""


def hardening(cwd: Path, env: Mapping[str, str], command: str = "") -> list[str]:
    """``-c key=value`` options that keep git from running any repository-configured program.

    Reading the config (``git config --list``) runs nothing; every driver it names gets its
    command replaced. Read once per repository and environment while its config files stay
    as they were (see the module's docstring). For a ``command`` of :data:`NO_DRIVERS`, only
    the fixed options.
    """
    if command in NO_DRIVERS:
        return list(_FIXED)
    place = _git_dir(cwd, env)
    key = (place, *sorted((k, v) for k, v in env.items() if _decides_config(k)))
    kept = _cache.get(key) if place is not None else None
    if kept is not None and _signature(kept.files) == kept.signature:
        return list(kept.options)
    read, keep = _read(cwd, env, place)
    with _cache_lock:
        _cache.pop(key, None)
        if keep:
            if len(_cache) >= _KEPT:
                del _cache[next(iter(_cache))]
            _cache[key] = read
    return list(read.options)


def _decides_config(name: str) -> bool:
    return name in ("HOME", "XDG_CONFIG_HOME") or (
        name.startswith("GIT_") and name not in _NOT_CONFIG
    )


def _read_drivers(cwd: Path, env: Mapping[str, str]) -> tuple[list[str], list[tuple[str, str]]]:
    """The driver-replacing options, and (origin, entry) of every config entry git read."""
    listed = subprocess.run(
        ["git", *_FIXED, "config", "--null", "--show-origin", "--list"],
        cwd=cwd, env=dict(env), capture_output=True, encoding="utf-8", errors="replace",
        check=False,
    )  # fmt: skip
    parts = listed.stdout.split("\0")
    entries = list(zip(parts[0::2], parts[1::2], strict=False))
    drivers = [_DRIVER_KEY.match(entry.split("\n", 1)[0]) for _, entry in entries]
    options = [part for m in drivers if m for part in ("-c", f"{m[0]}={_SAFE_DRIVER[m[3]]}")]
    return options, entries


def _read(
    cwd: Path, env: Mapping[str, str], place: tuple[Path, Path, Path] | None
) -> tuple[_Read, bool]:
    """The options read now with the files they depend on, and whether they can be kept (not
    when git found its directory some other way, an origin is not found, or a file was written
    racily)."""
    started = time.time_ns()
    drivers, entries = _read_drivers(cwd, env)
    options = (*_FIXED, *drivers)
    if place is None:
        return _Read((), (), options), False
    git_dir, common_dir, top = place
    files = {*_global_files(env), Path("/etc/gitconfig"), common_dir / "config",
             git_dir / "config.worktree"}  # fmt: skip
    for origin, entry in entries:
        kind, _, name = origin.partition(":")
        if kind != "file":
            continue
        source = Path(name) if Path(name).is_absolute() else top / name
        if not source.is_file():
            return _Read((), (), options), False
        files.add(source)
        key, _, value = entry.partition("\n")
        include = _INCLUDE_KEY.match(key)
        if include:
            target = _include_target(value, source, env)
            if target is None:
                return _Read((), (), options), False
            files.add(target)
            if (include.group(2) or "").lower().startswith("onbranch:"):
                files.add(git_dir / "HEAD")
    ordered = tuple(sorted(files))
    signature = _signature(ordered)
    racy = any(stamp is not None and max(stamp[2:]) >= started - RACY_NS for stamp in signature)
    return _Read(ordered, signature, options), not racy


def _include_target(value: str, source: Path, env: Mapping[str, str]) -> Path | None:
    """The file an include names; None for a form not followed here (``~user/``,
    ``%(prefix)/``): options read with it are not kept."""
    if value.startswith("~/"):
        return Path(env.get("HOME", "/")) / value[2:]
    if value.startswith(("~", "%(")):
        return None
    return source.parent / value


def _global_files(env: Mapping[str, str]) -> list[Path]:
    home = Path(env.get("HOME", "/"))
    xdg = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
    named = [
        Path(env[name]) for name in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM") if env.get(name)
    ]
    return [*named, xdg / "git" / "config", home / ".gitconfig"]


def _signature(files: tuple[Path, ...]) -> Signature:
    stamps: list[tuple[int, int, int, int] | None] = []
    for file in files:
        try:
            found = os.stat(file)
        except OSError:
            stamps.append(None)
        else:
            stamps.append((found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns))
    return tuple(stamps)


def _git_dir(cwd: Path, env: Mapping[str, str]) -> tuple[Path, Path, Path] | None:
    """(git directory, common directory, the top git reports relative origins from) of the
    repository a git call in ``cwd`` reaches; None when git would find it some other way (a
    bare repository, ``cwd`` inside a git directory)."""
    if env.get("GIT_DIR"):
        git_dir = cwd / env["GIT_DIR"]
        top = cwd / env["GIT_WORK_TREE"] if env.get("GIT_WORK_TREE") else cwd
    else:
        found = _discover(Path(os.path.realpath(cwd)))
        if found is None:
            return None
        git_dir, top = found
    if env.get("GIT_COMMON_DIR"):
        return git_dir, cwd / env["GIT_COMMON_DIR"], top
    try:
        common = (git_dir / "commondir").read_text().strip()
    except OSError:
        return git_dir, git_dir, top
    return git_dir, Path(os.path.normpath(git_dir / common)), top


def _discover(start: Path) -> tuple[Path, Path] | None:
    for folder in (start, *start.parents):
        dot_git = folder / ".git"
        if (dot_git / "HEAD").is_file():
            return dot_git, folder
        if dot_git.is_file():
            try:
                named = dot_git.read_text().strip()
            except OSError:
                return None
            if not named.startswith("gitdir: "):
                return None
            return folder / named.removeprefix("gitdir: "), folder
        if (folder / "HEAD").is_file() and (folder / "objects").is_dir():
            return None
    return None
