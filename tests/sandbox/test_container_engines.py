"""The docker and podman backends through the real engines: the attack corpus and each promise.

Run only where the engine answers (``docker info``/``podman info``) and has the image
(``HARNESS_TEST_IMAGE``, default ``python:3.12-slim``; the tests never pull it); otherwise
skipped with the reason. Asking a missing daemon is bounded, so nothing here hangs without one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.core.errors import ConfigError
from harness.sandbox import Limits, Sandbox
from harness.sandbox.engine import ENGINES
from tests.sandbox.corpus import ENV_CANARIES, make_world
from tests.sandbox.test_attack_corpus import run_corpus

IMAGE = os.environ.get("HARNESS_TEST_IMAGE", "python:3.12-slim")
BEAT = "while :; do echo x >> beat; sleep 0.05; done"


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    """An engine that runs containers of IMAGE here, or the test is skipped saying why not."""
    name: str = request.param
    try:
        Sandbox(name, image=IMAGE)  # type: ignore[arg-type]
    except ConfigError as exc:
        pytest.skip(str(exc))
    return name


@pytest.fixture
def canaries(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in ENV_CANARIES.items():
        monkeypatch.setenv(name, value)


@pytest.mark.slow
@pytest.mark.usefixtures("canaries")
def test_no_attempt_escapes_the_container(tmp_path: Path, engine: str) -> None:
    attempts, escapes, names = run_corpus(make_world(tmp_path, engine, image=IMAGE))

    assert attempts >= 300
    # The pids limit makes forks fail rather than kill the command, so that limit is kept but
    # not named: the fork storm is the one attempt allowed to end without "[killed: ...]".
    assert [n for n in names if n != "limits: fork storm"] == []


@pytest.mark.usefixtures("canaries")
def test_the_container_keeps_each_promise(tmp_path: Path, engine: str) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[core]\n")
    sandbox = Sandbox(engine, image=IMAGE, limits=Limits(tmp_mb=8))  # type: ignore[arg-type]
    command = (
        "id -u; echo x > /etc/pwned; echo forged >> .git/config; echo made > made.txt; "
        "df -k /tmp | tail -1; echo nets $(ls /sys/class/net); env"
    )

    result = sandbox.run(command, cwd=tmp_path, timeout=60)

    lines = result.output.splitlines()
    assert lines[0] == str(os.getuid())
    assert (tmp_path / "made.txt").read_text() == "made\n"
    assert (tmp_path / ".git" / "config").read_text() == "[core]\n"
    assert result.output.count("Read-only file system") == 2
    assert int(next(line for line in lines if line.endswith("/tmp")).split()[1]) <= 8 * 1024
    assert "nets lo" in lines  # no interface but loopback: no network
    assert "HOME=/tmp" in lines
    for value in ENV_CANARIES.values():
        assert value not in result.output


@pytest.mark.parametrize(
    ("command", "limits", "named"),
    [
        ("yes > big.txt", Limits(file_size_mb=5), "file size limit (5 MB)"),
        ("python3 -c 'x = bytearray(3 << 30)'", Limits(memory_mb=128), "memory limit (128 MB)"),
        ("yes", Limits(output_mb=2), "output limit (2 MB)"),
    ],
)
def test_a_limit_kills_the_container_and_is_named(
    tmp_path: Path, engine: str, command: str, limits: Limits, named: str
) -> None:
    result = Sandbox(engine, image=IMAGE, limits=limits).run(  # type: ignore[arg-type]
        command, cwd=tmp_path, timeout=120
    )

    assert result.limit == named, result.output[-300:]
    assert result.exit_code is None


def test_a_timeout_removes_the_container(tmp_path: Path, engine: str) -> None:
    result = Sandbox(engine, image=IMAGE).run(  # type: ignore[arg-type]
        f"setsid sh -c '{BEAT}' & {BEAT}", cwd=tmp_path, timeout=3
    )

    assert result.timed_out
    size = (tmp_path / "beat").stat().st_size
    time.sleep(0.5)
    assert (tmp_path / "beat").stat().st_size == size
    left = subprocess.run(
        [engine, "ps", "-a", "--filter", f"label=harness.pid={os.getpid()}", "--format",
         "{{.Names}}"], capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    assert left.stdout.split() == []


HARNESS = """
import sys
from harness.sandbox import Sandbox
Sandbox(sys.argv[1], image=sys.argv[2]).run(sys.argv[3], cwd=sys.argv[4], timeout=300)
"""


@pytest.mark.slow
def test_a_container_left_by_a_killed_harness_is_removed_at_the_next_start(
    tmp_path: Path, engine: str
) -> None:
    harness = subprocess.Popen(
        [sys.executable, "-c", HARNESS, engine, IMAGE, BEAT, str(tmp_path)],
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not (tmp_path / "beat").exists():
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.1)
    harness.kill()
    harness.wait()

    Sandbox(engine, image=IMAGE)  # type: ignore[arg-type]

    size = (tmp_path / "beat").stat().st_size
    time.sleep(0.5)
    assert (tmp_path / "beat").stat().st_size == size
    left = subprocess.run(
        [engine, "ps", "-a", "--filter", f"label=harness.pid={harness.pid}", "--format",
         "{{.Names}}"], capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    assert left.stdout.split() == []
