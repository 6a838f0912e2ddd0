"""The harness's end of the pytest reporter's channel: a named pipe read while pytest runs.

:class:`ReportChannel` makes a fresh key and a named pipe in a private folder, and a thread that
reads the pipe as the reporter (:mod:`harness.verify.pytest_reporter`) writes it. Each line is
checked as it arrives, against the key and the next sequence number, and kept; what comes later
cannot change a line already read. A line without the key's MAC, a gap in the numbers or an
overlong channel is a :attr:`ChannelLog.problem`, and nothing after it is kept.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
import secrets
import select
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

MAX_BYTES = 64 << 20
"""Most bytes one run may write into the channel; more is a problem, not a bigger buffer."""

_CHUNK = 1 << 16
_POLL_MS = 50

Phase = Literal["setup", "call", "teardown"]


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Started(_Record):
    """The session started."""

    kind: Literal["start"]


class Ran(_Record):
    """A phase of a test ran, seen by the reporter's hook wrapper; ``raised``: what it raised
    (``skip``, ``xfail``, an exception's type name), ``None`` when it returned."""

    kind: Literal["ran"]
    id: str
    when: Phase
    raised: str | None


class Reported(_Record):
    """pytest's report of a phase."""

    kind: Literal["report"]
    id: str
    when: Phase
    outcome: Literal["passed", "failed", "skipped"]
    xfail: bool
    crash: str = ""
    text: str = ""
    subtest: str | None = None
    """A subtest's name: one of the many reports of its test's call."""


class Uncollected(_Record):
    """A module (or other collector) that could not be collected."""

    kind: Literal["uncollected"]
    id: str
    text: str


class Collected(_Record):
    """The ids of the tests collected, once every plugin has selected them: the run must finish
    exactly these."""

    kind: Literal["collected"]
    ids: list[str]


class Finished(_Record):
    """The session finished, with pytest's exit status."""

    kind: Literal["finish"]
    exitstatus: int


Record = Annotated[
    Started | Ran | Reported | Uncollected | Collected | Finished, Field(discriminator="kind")
]
_RECORD: TypeAdapter[Record] = TypeAdapter(Record)


@dataclass
class ChannelLog:
    """The records read, in order, and the first problem with the channel (``None``: none).

    ``problem`` completes the sentence "pytest exited with code N and ...".
    """

    records: list[Record] = field(default_factory=list)
    problem: str | None = None


@functools.cache
def reporter_source() -> str:
    """The text of :mod:`harness.verify.pytest_reporter`, the boot the gate runs with
    ``python -I -B -c`` (see :func:`harness.verify.pytest_runtime.pytest_command`)."""
    return Path(__file__).with_name("pytest_reporter.py").read_text(encoding="utf-8")


class ReportChannel:
    """A keyed named pipe in ``folder`` (a private, empty folder) and the thread reading it.

    Use as a context manager around the run; :attr:`log` is complete once the block has left.
    """

    def __init__(self, folder: Path) -> None:
        self.key_file = folder / "key"
        """Where the reporter finds the key; it deletes the file once read."""
        self.pipe = folder / "pipe"
        self.log = ChannelLog()
        key = secrets.token_bytes(32)
        self._mac = hmac.new(key, digestmod=hashlib.sha256)
        descriptor = os.open(self.key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as file:
            file.write(key)
        os.mkfifo(self.pipe, 0o600)
        # Read and write: the pipe never reads as ended while no writer has opened it yet.
        self._fd = os.open(self.pipe, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
        # Written once the run is over: the reader wakes at once for its last look, instead of
        # at the end of the poll it is in.
        self._wake_read, self._wake_write = os.pipe()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, name="pytest-report", daemon=True)
        self._pending = bytearray()
        self._bytes = 0
        self._expected = 1

    def reporter_args(self) -> list[str]:
        """``KEY PIPE``: the reporter's own arguments, before pytest's."""
        return [str(self.key_file), str(self.pipe)]

    def __enter__(self) -> ReportChannel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        """Read what is left in the pipe (the writers are gone by now), then close it."""
        self._stop.set()
        os.write(self._wake_write, b"\0")
        self._thread.join()
        for fd in (self._fd, self._wake_read, self._wake_write):
            os.close(fd)
        if self._pending and self.log.problem is None:
            self.log.problem = f"its report channel ended inside line {self._expected}"

    def _read(self) -> None:
        poller = select.poll()
        poller.register(self._fd, select.POLLIN)
        poller.register(self._wake_read, select.POLLIN)
        while True:
            stopping = self._stop.is_set()  # read before polling: a last look after the stop
            if self._fd not in {fd for fd, _ in poller.poll(_POLL_MS)}:
                if stopping:
                    return
                continue
            try:
                chunk = os.read(self._fd, _CHUNK)
            except BlockingIOError:
                continue
            self._take(chunk)

    def _take(self, chunk: bytes) -> None:
        """Check and keep every complete line of ``chunk``; after a problem, only drain."""
        self._bytes += len(chunk)
        if self.log.problem is not None:
            return
        if self._bytes > MAX_BYTES:
            self.log.problem = f"its report channel carried more than {MAX_BYTES >> 20} MB"
            return
        self._pending += chunk
        if b"\n" not in chunk:
            return  # a line in the making: copied once more only when it ends
        *lines, rest = self._pending.split(b"\n")
        self._pending = bytearray(rest)
        for line in lines:
            problem = self._keep(line)
            if problem is not None:
                self.log.problem = problem
                return

    def _keep(self, line: bytearray) -> str | None:
        """Keep the record ``line`` carries, or say what is wrong with it."""
        number = self._expected
        foreign = f"its report channel carried a line its reporter did not write (line {number})"
        mac, _, signed = line.partition(b" ")
        check = self._mac.copy()
        check.update(signed)
        if not hmac.compare_digest(check.hexdigest().encode(), mac):
            return foreign
        sequence, _, body = signed.partition(b" ")
        if sequence != str(number).encode():
            return f"its report channel lost line {number} (line {sequence.decode()} came next)"
        try:
            record = _RECORD.validate_json(body)
        except ValidationError as exc:
            return f"its reporter wrote a record the harness cannot read (line {number}: {exc})"
        self.log.records.append(record)
        self._expected += 1
        return None
