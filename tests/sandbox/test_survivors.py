"""Nothing a command starts outlives it: setsid, nohup and double-fork children, also after
the harness itself is killed with SIGKILL."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.sandbox import Sandbox
from tests.cli.test_cli import write_loop

pytestmark = pytest.mark.usefixtures("bwrap_ok")

BEATS = ("setsid.beat", "nohup.beat", "forked.beat")


def escapers(tail: str) -> str:
    """A command that starts three children trying to outlive it, each appending to a file."""
    beat = "echo $$ > {0}.pid; while :; do echo x >> {0}; sleep 0.05; done"
    return (
        f"setsid sh -c '{beat.format(BEATS[0])}' & "
        f"nohup sh -c '{beat.format(BEATS[1])}' >/dev/null 2>&1 & "
        f"(sh -c '{beat.format(BEATS[2])}' &); {tail}"
    )


def growing(folder: Path) -> list[str]:
    """The beat files that still grow (a survivor writes to them)."""
    before = {name: _size(folder / name) for name in BEATS}
    time.sleep(0.5)
    return [name for name in BEATS if _size(folder / name) != before[name]]


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else -1


@pytest.mark.parametrize("tail", ["sleep 0.5; sleep 100", "sleep 0.5; echo done"])
def test_survivors_die_with_the_command(tmp_path: Path, tail: str) -> None:
    result = Sandbox("bwrap").run(escapers(tail), cwd=tmp_path, timeout=2)

    assert all((tmp_path / name).exists() for name in BEATS)  # they did start
    assert result.timed_out == tail.endswith("100")
    assert growing(tmp_path) == []


def test_none_lets_setsid_survivors_run_on(tmp_path: Path) -> None:
    """What backend 'none' lets through, so its warning is honest (unless a cgroup holds it)."""
    from harness.sandbox.limits import Cgroup, Limits

    cgroup = Cgroup.create(Limits())
    if cgroup is not None:
        cgroup.kill_all()
    Sandbox("none").run(escapers("sleep 0.5"), cwd=tmp_path, timeout=5)
    try:
        alive = growing(tmp_path)
        assert alive == ([] if cgroup is not None else list(BEATS))
    finally:  # the survivors' own pids (host pids: no namespace)
        for name in BEATS:
            with contextlib.suppress(OSError, ValueError):
                os.kill(int((tmp_path / f"{name}.pid").read_text()), signal.SIGKILL)


@pytest.mark.slow
def test_survivors_die_when_the_harness_is_killed_with_sigkill(tmp_path: Path) -> None:
    shell = {"name": "run_shell", "arguments": {"command": escapers("exec sleep 60")}}
    (tmp_path / "author.json").write_text(json.dumps([shell, "done"]))
    write_loop(tmp_path, """\
        name = "survive"
        goal = "start things"
        isolation = "none"
        model = "scripted:author.json"
        [critic]
        enabled = false
        [[gates]]
        type = "command"
        cmd = "true"
        [sandbox]
        backend = "bwrap"
        """)  # fmt: skip
    env = dict(os.environ)
    env.pop("HARNESS_MODEL", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "harness.cli.main", "run", "--quiet"], cwd=tmp_path, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not all((tmp_path / name).exists() for name in BEATS):
        assert process.poll() is None, "the harness ended before the command started"
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.05)
    assert growing(tmp_path) == list(BEATS)  # all three running under the live harness

    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)
    time.sleep(0.2)

    assert growing(tmp_path) == []
