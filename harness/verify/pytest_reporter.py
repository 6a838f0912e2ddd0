"""The pytest gate's reporter: runs inside pytest and sends each outcome out as it happens.

The gate starts pytest as ``python -I -B -c <this file's text> KEY PIPE PYTEST_ARGS...``; the
harness never imports this module. ``KEY`` is a file the reporter reads and deletes before any code
of the workspace is imported; ``PIPE`` is a named pipe that the harness reads while pytest runs
(see :mod:`harness.verify.report_channel`). Each line the reporter writes is
``MAC SEQ JSON``: a sequence number and an HMAC-SHA256 of ``SEQ JSON`` under the key, so a line
the code under test writes into the pipe is told apart, and a line taken out of it leaves a gap.

What it sends: the session's start; each phase of a test (setup, call, teardown) as the reporter's
own hook wrappers saw it run, with the exception it raised, before pytest builds its report;
pytest's report of that phase; each module that could not be collected; the ids collected, once
every plugin has selected them; and the session's end with pytest's exit status. The harness
compares a report with what was seen to run: a phase reported passed that raised, or was never
seen to run, was forged; and a run with what it collected: a test collected and not finished, or
finished and not collected, was hidden or made up.
"""

# No ``from __future__`` import: a prelude may come before this text (see
# harness.verify.pytest_runtime), so the annotations are ones Python 3.9 can evaluate.
import hashlib
import hmac
import importlib
import json
import os
import sys
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest
from _pytest.outcomes import Skipped, XFailed

try:
    from _pytest.subtests import SubtestReport
except ImportError:  # pytest before 9 has no subtests of its own
    SubtestReport = None  # type: ignore[assignment,misc]

TEXT_CHARS = 20_000
"""Most characters of one failure's text sent; the gate keeps far fewer."""

_write = os.write  # taken before the code under test is imported: patching os later changes nothing
_dumps = json.dumps


class Channel:
    """The writing end of the pipe; each record goes out as one keyed, numbered line."""

    def __init__(self, fd: int, key: bytes) -> None:
        self._fd = fd
        self._mac = hmac.new(key, digestmod=hashlib.sha256)  # the key itself is not kept
        self._sequence = 0

    def send(self, record: dict[str, Any]) -> None:
        self._sequence += 1
        line = f"{self._sequence} {_dumps(record, separators=(',', ':'))}"
        mac = self._mac.copy()
        mac.update(line.encode())
        data = f"{mac.hexdigest()} {line}\n".encode()
        while data:
            data = data[_write(self._fd, data) :]


class Reporter:
    """The pytest plugin: hook wrappers that see each phase run, and hooks that see each report."""

    def __init__(self, channel: Channel) -> None:
        self._channel = channel

    def pytest_sessionstart(self) -> None:
        self._channel.send({"kind": "start"})

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, None, None]:
        return (yield from self._watch(item, "setup"))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        return (yield from self._watch(item, "call"))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, None, None]:
        return (yield from self._watch(item, "teardown"))

    def _watch(self, item: pytest.Item, when: str) -> Generator[None, None, None]:
        """Run the phase's hook and send what it raised (``None``: it returned)."""
        try:
            result = yield
        except BaseException as exc:
            self._channel.send({"kind": "ran", "id": item.nodeid, "when": when,
                                "raised": _raised(exc)})  # fmt: skip
            raise
        self._channel.send({"kind": "ran", "id": item.nodeid, "when": when, "raised": None})
        return result

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record: dict[str, Any] = {"kind": "report", "id": report.nodeid, "when": report.when,
                                  "outcome": report.outcome, "xfail": hasattr(report, "wasxfail")}  # fmt: skip
        if SubtestReport is not None and isinstance(report, SubtestReport):
            record["subtest"] = report.head_line  # one of many reports of its test's call
        if report.outcome == "failed":
            record |= {"crash": _crash(report), "text": report.longreprtext[-TEXT_CHARS:]}
        self._channel.send(record)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.outcome == "failed":
            text = report.longreprtext[-TEXT_CHARS:]
            self._channel.send({"kind": "uncollected", "id": report.nodeid, "text": text})

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_collection_modifyitems(
        self, items: list[pytest.Item]
    ) -> Generator[None, None, None]:
        """Send the ids collected once every plugin has selected them (``-k``, ``-m``,
        ``--deselect``, a conftest): a test taken out of ``items`` after this is not finished."""
        result = yield
        self._channel.send({"kind": "collected", "ids": [item.nodeid for item in items]})
        return result

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """The status as the other hooks left it, which pytest exits with."""
        self._channel.send({"kind": "finish", "exitstatus": int(session.exitstatus)})


def _raised(exc: BaseException) -> str:
    """``skip``, ``xfail`` or the exception's type name."""
    if isinstance(exc, XFailed):
        return "xfail"
    if isinstance(exc, Skipped):
        return "skip"
    return type(exc).__name__


def _crash(report: pytest.TestReport) -> str:
    """The one-line reason pytest gives for a failed phase."""
    crash = getattr(report.longrepr, "reprcrash", None)
    message = getattr(crash, "message", None)
    if isinstance(message, str):
        return message
    lines = report.longreprtext.strip().splitlines()
    return lines[-1] if lines else ""


def main(argv: list[str]) -> "int | pytest.ExitCode":
    """Take the key (``argv[0]``) and open the pipe (``argv[1]``), then run pytest on the rest."""
    key_file, pipe = Path(argv[0]), Path(argv[1])
    key = key_file.read_bytes()
    key_file.unlink()
    channel = Channel(os.open(pipe, os.O_WRONLY | os.O_CLOEXEC), key)
    del key
    from _pytest.config import default_plugins

    for name in default_plugins:  # pytest's own, imported before the workspace is on sys.path
        importlib.import_module("_pytest." + name)
    sys.path.insert(0, os.getcwd())  # as ``python -m pytest`` puts it, now that pytest is in
    return pytest.main(argv[2:], plugins=[Reporter(channel)])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
