"""No host unix socket is reachable from a sandbox without a network, wherever it is mounted."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.sandbox import Sandbox
from harness.sandbox.host_sockets import host_socket_files, visible_sockets

pytestmark = pytest.mark.usefixtures("bwrap_ok")

PLACES = ("tmp_on_path", "home_on_path", "workspace", "writable", "readonly", "root")
"""Where a host service's socket can lie in what the sandbox mounts: a folder of the private
``/tmp`` mounted back (a virtual environment's ``bin`` on ``PATH``), one of the hidden home
mounted back, the workspace, a folder made writable, one shown read-only, and the read-only
root outside ``/tmp``, ``/run`` and the home (``/var/tmp`` here, ``/var/lib`` on a server)."""


class Listener:
    """A host process's unix socket server at ``path``; what it accepted."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.accepted: list[object] = []
        self.server = socket.socket(socket.AF_UNIX)
        self.server.bind(str(path))
        self.server.listen()
        self.server.settimeout(10)  # the accepting thread ends by itself
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        try:
            self.accepted.append(self.server.accept())
        except OSError:
            return

    def wait_for_one(self) -> int:
        for _ in range(100):
            if self.accepted:
                break
            time.sleep(0.05)
        return len(self.accepted)


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Path]]:
    """A folder for each of :data:`PLACES`, laid out as the sandbox will mount it."""
    home = tmp_path / "home"
    (home / "venv" / "bin").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    on_tmp = Path(tempfile.mkdtemp(prefix="harness-venv-", dir="/tmp")) / "bin"
    on_tmp.mkdir()
    monkeypatch.setenv("PATH", f"{on_tmp}:{home / 'venv' / 'bin'}:{os.environ['PATH']}")
    workspace = tmp_path / "ws"
    writable, readonly = tmp_path / "cache", tmp_path / "tools"
    for folder in (workspace, writable, readonly):
        folder.mkdir()
    try:
        root = Path(tempfile.mkdtemp(prefix="harness-test-", dir="/var/tmp"))
    except OSError as exc:
        pytest.skip(f"cannot make a folder in /var/tmp: {exc}")
    yield {"tmp_on_path": on_tmp, "home_on_path": home / "venv" / "bin", "workspace": workspace,
           "writable": writable, "readonly": readonly, "root": root}  # fmt: skip
    shutil.rmtree(on_tmp.parent)
    shutil.rmtree(root)


def connect(path: Path) -> str:
    return f"python3 -c \"import socket; socket.socket(socket.AF_UNIX).connect('{path}')\""


@pytest.mark.parametrize("place", PLACES)
def test_a_host_socket_is_refused_wherever_the_sandbox_mounts_it(
    places: dict[str, Path], place: str
) -> None:
    """Before, only ``/run`` was emptied: a service listening in any other mounted folder
    (the workspace, a folder on ``PATH``, ``/var/lib``) took the sandbox's connection."""
    listener = Listener(places[place] / "service.sock")
    sandbox = Sandbox("bwrap", readonly=[places["readonly"]])

    result = sandbox.run(
        f"ls -l {places[place]}; " + connect(listener.path), cwd=places["workspace"],
        timeout=20, writable=[places["writable"]],
    )  # fmt: skip

    assert "service.sock" in result.output  # the folder is shown: the socket is what is hidden
    assert result.exit_code != 0
    assert "ConnectionRefusedError" in result.output, result.output
    assert listener.accepted == []
    with socket.socket(socket.AF_UNIX) as client:  # the service does listen on the host
        client.connect(str(listener.path))
    assert listener.wait_for_one() == 1
    listener.server.close()


def test_with_the_network_on_the_sandbox_leaves_host_sockets_alone(
    places: dict[str, Path],
) -> None:
    listener = Listener(places["workspace"] / "service.sock")

    result = Sandbox("bwrap", network=True).run(connect(listener.path),
                                                cwd=places["workspace"], timeout=20)  # fmt: skip

    assert result.exit_code == 0, result.output
    assert listener.wait_for_one() == 1
    listener.server.close()


def test_the_sandboxs_own_sockets_still_work(tmp_path: Path) -> None:
    """Only the host's socket files are covered: a command's own server and client talk."""
    serve_and_call = (
        "import socket; s = socket.socket(socket.AF_UNIX); s.bind('own.sock'); s.listen(); "
        "c = socket.socket(socket.AF_UNIX); c.connect('own.sock'); print('own-ok')"
    )

    result = Sandbox("bwrap").run(f'python3 -c "{serve_and_call}"', cwd=tmp_path, timeout=20)

    assert (result.exit_code, result.output) == (0, "own-ok\n")


def test_the_host_socket_table_gives_bound_files_only(tmp_path: Path) -> None:
    """Listed: a socket file that is still one; not: abstract names, a file removed since, a
    socket under a hidden area unless a folder shown again holds it."""
    shown, hidden = tmp_path / "shown", tmp_path / "hidden"
    shown.mkdir()
    hidden.mkdir()
    kept = Listener(shown / "a.sock")
    covered = Listener(hidden / "b.sock")
    removed = Listener(tmp_path / "c.sock")
    removed.path.unlink()
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind(f"\0harness-test-{os.getpid()}")

    listed = host_socket_files()
    visible = visible_sockets([tmp_path], [shown])

    assert {kept.path, covered.path} <= set(listed)
    assert removed.path not in listed
    assert not any("harness-test-" in str(path) for path in listed)
    assert kept.path in visible
    assert covered.path not in visible
    for item in (kept.server, covered.server, removed.server, abstract):
        item.close()
