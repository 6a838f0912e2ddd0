"""Appending to a log of the harness's own at every step, to the file its first line made."""

from __future__ import annotations

import os
import weakref

from harness.core import nofollow


class Appender:
    """Appends to one file of the harness's own (a run's event log, its trajectory), each
    :meth:`write` one ``write`` of its own.

    The first write makes the file as :func:`~harness.core.nofollow.append` does (its folders
    too, no link followed) and keeps it open; each later write goes to that very file, once a
    look at its path (an ``lstat``, not a walk from the root: the record is written at every
    step) finds the file still there under its only name. Anything else there (a folder renamed
    and another put in its place, a link, a second name, nothing) is looked at as
    :func:`~harness.core.nofollow.append` looks, which raises
    :class:`~harness.core.nofollow.UnsafePath` naming what it found; the appender is closed from
    then on (nothing more is written anywhere). A path that reaches the very file through a link
    on the way is written, to the file: nothing goes elsewhere.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None
    ) -> None:
        self.path = path
        self.root = root
        self.closed = False
        self._fd: int | None = None
        self._file: tuple[int, int] | None = None

    def write(self, data: bytes) -> None:
        if self.closed:
            return
        try:
            if self._fd is None:
                flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
                fd = nofollow.open_file(self.path, flags, root=self.root, make_folders=True)
                self._fd, self._file = fd, nofollow.identity(fd)
                weakref.finalize(self, os.close, fd)
            elif not self._in_place():  # walked to, as append does: it names what it found
                nofollow.append(self.path, data, root=self.root, expect=self._file)
                return
            os.write(self._fd, data)
        except nofollow.UnsafePath:
            self.closed = True
            raise

    def _in_place(self) -> bool:
        try:
            info = os.lstat(self.path)
        except OSError:
            return False
        return (info.st_dev, info.st_ino) == self._file and info.st_nlink == 1
