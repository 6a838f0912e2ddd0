"""Shared fixtures. The network is blocked: a test that tries to leave this machine fails."""

from __future__ import annotations

import importlib.util
import ipaddress
import itertools
import os
import py_compile
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import settings

if TYPE_CHECKING:
    from harness.core.event_schema import EventBase
    from harness.models.base import ToolCall

# Fewer, fixed examples for bench/mutation.py, which runs the focused tests once per mutant.
settings.register_profile("mutation", max_examples=25, derandomize=True)


def pytest_configure(config: pytest.Config) -> None:
    """The harness's modules compiled once, before any test starts: the suite starts
    ``python -m harness.cli.main`` and gate subprocesses hundreds of times, and with
    ``PYTHONDONTWRITEBYTECODE`` set (or a fresh checkout) each would compile them again
    (0.4 s of CPU a start). Only the controller compiles, not each ``-n`` worker."""
    if not hasattr(config, "workerinput"):
        _compile(Path(__file__).parent.parent / "harness")


def _compile(package: Path) -> None:
    """Bytecode for each module of ``package`` whose bytecode is missing or stale. It is
    checked against the source's hash, not its time: a module rewritten within the second
    (``bench/mutation.py`` writes one mutant after another) is never read from an older one's."""
    header = importlib.util.MAGIC_NUMBER + (0b11).to_bytes(4, "little")  # checked hash
    for source in package.rglob("*.py"):
        cached = Path(importlib.util.cache_from_source(str(source)))
        expected = header + importlib.util.source_hash(source.read_bytes())
        try:
            with cached.open("rb") as kept:
                if kept.read(len(expected)) == expected:
                    continue
        except OSError:
            pass
        py_compile.compile(
            str(source), str(cached), invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH
        )


@pytest.hookimpl(optionalhook=True)  # a run without xdist (no plugin autoload) knows no such hook
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """Two workers a core for ``-n auto``: much of the suite waits (on git, on pytest in a
    sandbox, on the servers and processes it starts), and with one worker a core the cores were
    idle about a quarter of the time."""
    return 2 * len(os.sched_getaffinity(0))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tests marked ``slow`` first, those on real projects (``tests/realworld``, the longest)
    before the others, then the rest; and under ``-n``, dealt out to the workers' shares.

    ``--dist worksteal`` (set in ``pyproject.toml``) gives each worker one contiguous share of
    the list at the start, and a worker left idle takes over the end of the longest queue. Each
    slow module goes whole to the share that holds the fewest tests so far (its module-scoped
    fixture, a Ray cluster or a shared run, is then made on one worker, not on each), and the
    other tests fill the shares to the same length: each share starts with its part of the
    long tests."""
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    rest = [item for item in items if item.get_closest_marker("slow") is None]
    slow.sort(key=lambda item: "realworld" not in item.path.parts)
    workers = getattr(config, "workerinput", {}).get("workercount", 1)
    shares: list[list[pytest.Item]] = [[] for _ in range(workers)]
    for _, module in itertools.groupby(slow, key=lambda item: item.path):
        min(shares, key=len).extend(module)
    for item in rest:
        min(shares, key=len).append(item)
    items[:] = [item for share in shares for item in share]


_real_connect = socket.socket.connect


def _local_only(self: socket.socket, address: object) -> object:
    host = address[0] if isinstance(address, tuple) else address
    if isinstance(host, str) and not host.startswith("/") and not _this_machine(host):
        raise OSError(f"network access blocked in tests: {address!r}")
    return _real_connect(self, address)  # type: ignore[arg-type]


def _this_machine(host: str) -> bool:
    """``localhost``, a loopback address (IPv4 inside IPv6 too) or ``0.0.0.0``."""
    if host == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback or ip.is_unspecified


@pytest.fixture(autouse=True)
def _block_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket.socket, "connect", _local_only)


PLAIN_CHILD_PYTEST = {
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    "HARNESS_SANDBOX_ENV": "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
}
"""What the tests' own environment tells the pytest runs they start: load only the plugins
named (and, through ``HARNESS_SANDBOX_ENV``, so do the sandboxed ones: the gates', the agent's).
The plugins this environment holds for the suite itself cost about a second a start
(hypothesis's imports all of hypothesis at the end of every run, anyio's all of anyio), and no
project under test uses them: a shipped example's whole run took 17.9 s with them and 5.3 s
without."""


@pytest.fixture(scope="session", autouse=True)
def _plain_child_pytest() -> Iterator[None]:
    """:data:`PLAIN_CHILD_PYTEST`, set once the workers are up (they need their plugins). The
    tests of a clone installed as the README says take it out, and run as a user's shell does."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in PLAIN_CHILD_PYTEST.items():
            patch.setenv(name, value)
        yield


@pytest.fixture(autouse=True)
def _own_state_home(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """What the harness keeps in the user's state folder (batch ledgers) stays in the test's."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))


@pytest.fixture
def own_tmpdir(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A temporary folder of the test's own for the harness processes it starts (``TMPDIR``):
    what `harness clean` finds there, left by killed processes, is the test's alone, never that
    of a test killing runs beside it."""
    folder = tmp_path_factory.mktemp("t")
    monkeypatch.setenv("TMPDIR", str(folder))
    return folder


@pytest.fixture(scope="module")
def _module_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("module-state")


@pytest.fixture
def module_state_home(_module_state: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The module's state folder instead of the test's own. What the harness keeps there by
    base commit (a gate's results at the base, :mod:`harness.verify.base_results`) is then
    measured by a module's first test on a worker and read by the others, as a user's runs
    from one base read it; tests that start from one base commit share it with
    :func:`copy_repo`. What is kept per owner (an inbox, a batch ledger) is keyed by the
    owner's path, so each test still keeps to its own."""
    monkeypatch.setenv("XDG_STATE_HOME", str(_module_state))
    return _module_state


def copy_repo(template: Path, target: Path) -> Path:
    """A copy of the git repository ``template`` at ``target``: the same commits, so the same
    base commit for every copy of one template. Its index is refreshed (the copied files have
    new times), so that it is as a repository made there: git's next command does not rewrite it."""
    shutil.copytree(template, target, symlinks=True)
    git(target, "update-index", "-q", "--refresh")
    return target


def alive(pid: int) -> bool:
    """Whether process ``pid`` is still running (a zombie that waits to be reaped has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def processes_naming(marker: str, *, but: int | None = None) -> list[int]:
    """The running processes (other than ``but``) whose command line holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            named = entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes()
        except OSError:  # ended meanwhile
            continue
        if named and int(entry.name) != but and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def within(seconds: float, done: Callable[[], object]) -> bool:
    """Whether ``done()`` comes true within ``seconds`` (asked every 20 ms)."""
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def make_repo(path: Path, files: dict[str, str]) -> Path:
    """A real git repository at ``path`` with ``files`` committed."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "test@example.com")
    git(path, "config", "user.name", "Test")
    for name, text in files.items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path


def verdict_arguments(
    score: float, reasons: list[str] | None = None, fixes: list[str] | None = None
) -> dict[str, Any]:
    """The arguments of a critic's ``verdict`` call: reasons first, then fixes, then the score."""
    return {"reasons": ["ok"] if reasons is None else reasons, "fixes": fixes or [], "score": score}


def verdict_call(
    score: float, reasons: list[str] | None = None, fixes: list[str] | None = None
) -> ToolCall:
    """A scripted critic reply: the ``verdict`` tool called with this verdict."""
    from harness.models.base import ToolCall

    return ToolCall("verdict", verdict_arguments(score, reasons, fixes))


def verdict_entry(
    score: float, reasons: list[str] | None = None, fixes: list[str] | None = None
) -> dict[str, Any]:
    """The same reply as an entry of a JSON script file (``scripted:PATH``)."""
    return {"name": "verdict", "arguments": verdict_arguments(score, reasons, fixes)}


def event(kind: str, /, **data: Any) -> EventBase:
    """The event of ``kind`` with ``data``, as a component would emit it."""
    from harness.core.event_schema import EVENT_MODELS

    return EVENT_MODELS[kind](**data)


class RecordingSink:
    """Keeps every event emitted to it: ``models`` as emitted, ``events`` as (kind, the fields
    the emitter set that the event log writes: not what only the trajectory keeps)."""

    def __init__(self) -> None:
        self.models: list[EventBase] = []
        self.events: list[tuple[str, dict[str, Any]]] = []

    def emit(self, event: EventBase) -> None:
        self.models.append(event)
        logged = {k for k in event.model_fields_set if not type(event).model_fields[k].exclude}
        self.events.append((event.kind, {k: getattr(event, k) for k in logged}))
