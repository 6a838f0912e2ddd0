"""Opening the harness's own files without following a link it did not make.

The harness keeps its state (event logs, progress.md, spend records, locks, inboxes, reports,
batch records) in folders an agent's commands may reach: with ``isolation = "none"`` they lie in
the very folder the agent works in, and a read-only bind mount over a file does not stop its
parent folder from being renamed. A symlink planted on the way (``.harness -> ~``, or
``events.jsonl -> ~/.bashrc``) would make the harness write where the agent chose.

So every such file is reached by walking from a **trusted root** one folder at a time, each
opened relative to its parent's descriptor with ``O_DIRECTORY | O_NOFOLLOW``, and the file itself
with ``O_NOFOLLOW``; it must be a regular file (a FIFO or a device is refused) and reads are
bounded. A refusal is an :class:`UnsafePath` naming the path: the run stops with ``ERROR``.

The trusted root of a path is the outermost root registered with :func:`trusted_root` that holds
it (a loop registers its workspace while it runs), else the path's own folder: only the file's
name is then taken without following.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

from harness.core.errors import Stopped
from harness.core.stop import StopReason

READ_LIMIT = 64 * 1024 * 1024
"""The most a state file may hold when read back (64 MB)."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # a FIFO never blocks the open

_roots: list[Path] = []
_roots_lock = threading.Lock()


class UnsafePath(Stopped):
    """A file of the harness's own is reached through a link, is not a regular file, is too big,
    or was moved or replaced since the harness made it: it is not read or written."""

    def __init__(self, path: str | os.PathLike[str], problem: str) -> None:
        self.path = Path(path)
        super().__init__(
            StopReason.ERROR,
            f"{path}: {problem}; the harness follows no link it did not make and stops here",
        )


@contextlib.contextmanager
def trusted_root(folder: str | os.PathLike[str]) -> Iterator[Path]:
    """While inside, no symlink is followed below ``folder`` to reach the harness's files."""
    root = Path(os.path.abspath(folder))
    with _roots_lock:
        _roots.append(root)
    try:
        yield root
    finally:
        with _roots_lock:
            _roots.remove(root)


def split(path: str | os.PathLike[str], root: str | os.PathLike[str] | None = None) -> tuple[
    Path, tuple[str, ...]
]:  # fmt: skip
    """``path`` as its trusted root and the names below it (the last one the file's)."""
    target = Path(os.path.abspath(path))
    candidates = [Path(os.path.abspath(root))] if root is not None else []
    with _roots_lock:
        candidates += sorted(_roots, key=lambda r: len(r.parts))
    for base in candidates:
        if target != base and target.is_relative_to(base):
            return base, target.relative_to(base).parts
    return target.parent, (target.name,)


def open_folder(
    path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None, make: bool = False
) -> int:
    """A descriptor of folder ``path``, reached from its trusted root without following links."""
    base, names = split(Path(path) / "_", root)
    return _walk(base, names[:-1], make=make, shown=path)


def open_file(
    path: str | os.PathLike[str],
    flags: int,
    *,
    root: str | os.PathLike[str] | None = None,
    make_folders: bool = False,
    mode: int = 0o644,
) -> int:
    """A descriptor of the regular file ``path`` opened with ``flags``, no link followed; opened
    for writing, it must have no other name (a hard link would carry the writes elsewhere)."""
    base, names = split(path, root)
    folder = _walk(base, names[:-1], make=make_folders, shown=path)
    try:
        fd = _open_at(folder, names[-1], flags, mode, path)
    finally:
        os.close(folder)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafePath(str(path), f"{_kind(info.st_mode)}, not a regular file")
        if flags & (os.O_WRONLY | os.O_RDWR) and info.st_nlink > 1:
            raise UnsafePath(path, "has another name (a hard link): written in place, it would "
                             "change another file")  # fmt: skip
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bytes(
    path: str | os.PathLike[str],
    *,
    root: str | os.PathLike[str] | None = None,
    limit: int = READ_LIMIT,
) -> bytes:
    """The content of ``path`` (``FileNotFoundError`` when missing), at most ``limit`` bytes."""
    fd = open_file(path, os.O_RDONLY, root=root)
    try:
        if os.fstat(fd).st_size > limit:
            raise UnsafePath(path, f"larger than {limit} bytes")
        data = read_up_to(fd, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise UnsafePath(path, f"larger than {limit} bytes")
    return data


def read_text(
    path: str | os.PathLike[str],
    *,
    root: str | os.PathLike[str] | None = None,
    limit: int = READ_LIMIT,
) -> str:
    """``path`` read as UTF-8 text by :func:`read_bytes`."""
    return read_bytes(path, root=root, limit=limit).decode("utf-8")


def identity(fd: int) -> tuple[int, int]:
    """What tells one file from another: its device and inode."""
    info = os.fstat(fd)
    return info.st_dev, info.st_ino


def append(
    path: str | os.PathLike[str],
    data: bytes,
    *,
    root: str | os.PathLike[str] | None = None,
    expect: tuple[int, int] | None = None,
    durable: bool = False,
) -> tuple[int, int]:
    """Append ``data`` to ``path`` in one write (made with its folders when missing), fsynced
    when ``durable``.

    ``expect``: the identity the file had before; a different file there (the folder was renamed
    and another put in its place) is refused. Returns the file's identity.
    """
    flags = os.O_WRONLY | os.O_APPEND | (os.O_CREAT if expect is None else 0)
    try:
        fd = open_file(path, flags, root=root, make_folders=expect is None)
    except FileNotFoundError:
        raise UnsafePath(path, "gone since the harness made it (its folder moved?)") from None
    try:
        found = identity(fd)
        if expect is not None and found != expect:
            raise UnsafePath(path, "not the file the harness made (moved or replaced)")
        os.write(fd, data)
        if durable:
            os.fsync(fd)
        return found
    finally:
        os.close(fd)


def write_atomic(
    path: str | os.PathLike[str],
    data: bytes,
    *,
    root: str | os.PathLike[str] | None = None,
    durable: bool = True,
) -> Path:
    """Replace ``path`` with ``data`` atomically and durably; its folders are made when missing.

    The data goes to a new temporary file beside the target, flushed and fsynced, renamed over
    it and the folder fsynced, all relative to the folder's descriptor. An existing target that
    is not a regular file (a symlink among them) is refused; its permission bits are kept.

    ``durable=False`` skips both fsyncs: the replacement is still atomic for every process (a
    reader, or a process killed at any moment, sees the old file or the new one), but an
    operating-system crash or power cut may undo it.
    """
    base, names = split(path, root)
    folder = _walk(base, names[:-1], make=True, shown=path)
    name = names[-1]
    try:
        kept = _existing_mode(folder, name, path)
        mode = 0o644 if kept is None else kept
        tmp = f".{name}.{os.urandom(4).hex()}.tmp"  # secrets.token_hex, without its imports
        fd = _open_at(folder, tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600, path)
        try:
            try:
                view = memoryview(data)
                while view:  # os.write may write less than it is given
                    view = view[os.write(fd, view) :]
                os.fchmod(fd, mode)
                if durable:
                    os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=folder)
            raise
        if durable:
            os.fsync(folder)
    finally:
        os.close(folder)
    return Path(path)


def unlink(path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None) -> None:
    """Remove ``path`` (a link itself, never what it points to); nothing when it is missing."""
    base, names = split(path, root)
    try:
        folder = _walk(base, names[:-1], make=False, shown=path)
    except FileNotFoundError:
        return
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(names[-1], dir_fd=folder)
    finally:
        os.close(folder)


def rename(
    path: str | os.PathLike[str], new_name: str, *, root: str | os.PathLike[str] | None = None
) -> bool:
    """Rename ``path`` to ``new_name`` in the same folder; False when ``path`` is missing."""
    base, names = split(path, root)
    try:
        folder = _walk(base, names[:-1], make=False, shown=path)
    except FileNotFoundError:
        return False
    try:
        if _existing_mode(folder, names[-1], path) is None:
            return False
        os.replace(names[-1], new_name, src_dir_fd=folder, dst_dir_fd=folder)
        return True
    finally:
        os.close(folder)


def descend(base: Path, names: Sequence[str], *, make: bool = False) -> int:
    """A descriptor of the folder ``base/names...``: ``base`` taken as it is, each name below it
    opened relative to its parent without following a link (made when missing, with ``make``).

    An :class:`OSError` says why a step failed (``ELOOP``/``ENOTDIR``: a link or a file on the
    way); the harness's files (:func:`_walk`) and the agent's tools each explain it their way.
    """
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name in names:
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not make:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o755, dir_fd=fd)
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _walk(base: Path, names: tuple[str, ...], *, make: bool, shown: object) -> int:
    """:func:`descend` for a file of the harness's own: a link on the way is an UnsafePath."""
    if make:
        base.mkdir(parents=True, exist_ok=True)
    try:
        return descend(base, names, make=make)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise _refusal(exc, shown, exc.filename or "a folder") from None


def _open_at(folder: int, name: str, flags: int, mode: int, shown: object) -> int:
    try:
        fd = os.open(name, flags | _FILE_FLAGS, mode, dir_fd=folder)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise _refusal(exc, shown, name) from None
    os.set_blocking(fd, True)
    return fd


def _existing_mode(folder: int, name: str, shown: object) -> int | None:
    """The permission bits of the regular file ``name`` in ``folder``; ``None`` when absent."""
    try:
        info = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(info.st_mode):
        raise UnsafePath(str(shown), f"{_kind(info.st_mode)}, not a regular file")
    return stat.S_IMODE(info.st_mode)


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a plain file"


def _refusal(exc: OSError, shown: object, name: str) -> UnsafePath | OSError:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return UnsafePath(str(shown), f"{name!r} on its path is a symlink or not a folder")
    if exc.errno == errno.ENXIO:
        return UnsafePath(str(shown), "a named pipe, not a regular file")
    return exc


def read_up_to(fd: int, most: int) -> bytes:
    """Up to ``most`` bytes from ``fd``'s position: fewer only at the end of the file."""
    chunks: list[bytes] = []
    while most > 0:
        chunk = os.read(fd, min(most, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        most -= len(chunk)
    return b"".join(chunks)
