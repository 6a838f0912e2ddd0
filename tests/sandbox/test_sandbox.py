"""The sandbox's promises, each tried for real: environment, processes, files, network, limits."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.core.errors import ConfigError
from harness.sandbox import Limits, Sandbox
from harness.sandbox.limits import MB
from harness.sandbox.own_source import source_folders
from harness.sandbox.sandbox import NOT_SANDBOXED

pytestmark = pytest.mark.usefixtures("bwrap_ok")

CANARIES = {
    "OPENAI_API_KEY": "sk-canary-openai",
    "DATABASE_URL": "postgres://u:canary-db@h/db",
    "GH_PAT": "canary-ghpat",
    "MYAPIKEY": "canary-myapikey",
    "PLAIN_NAME": "canary-plain",
}


@pytest.fixture
def canaries(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in CANARIES.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("HARNESS_SANDBOX_ENV", raising=False)  # only what the sandbox is given


def test_only_allow_listed_variables_reach_the_command(tmp_path: Path, canaries: None) -> None:
    result = Sandbox("bwrap", env=["PLAIN_NAME"]).run(
        "env; cat /proc/1/environ /proc/$PPID/environ | tr '\\0' '\\n'", cwd=tmp_path, timeout=10
    )

    names = {line.split("=", 1)[0] for line in result.output.splitlines() if "=" in line}
    assert result.exit_code == 0
    allowed = {"PATH", "HOME", "LANG", "TERM", "TZ", "PWD", "SHLVL", "PLAIN_NAME", "_"}
    assert names <= allowed | {"PYTHONDONTWRITEBYTECODE"}  # set by the sandbox, not passed on
    assert "PYTHONDONTWRITEBYTECODE=1" in result.output
    assert "HOME=/tmp/home" in result.output
    assert "PLAIN_NAME=canary-plain" in result.output  # named in env: passed on purpose
    for name in ("OPENAI_API_KEY", "DATABASE_URL", "GH_PAT", "MYAPIKEY"):
        assert CANARIES[name] not in result.output


def test_proc_shows_only_the_sandbox_processes(tmp_path: Path) -> None:
    result = Sandbox("bwrap").run(
        "ls /proc | grep -cE '^[0-9]+$'; cat /proc/1/cmdline | tr '\\0' ' '",
        cwd=tmp_path,
        timeout=10,
    )

    count, init = result.output.splitlines()
    assert 2 <= int(count) <= 6  # bwrap's init, the shell, ls, grep: not the harness's
    assert "bwrap" in init or "sh" in init


def test_only_the_workspace_is_writable_and_its_git_is_not(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[core]\n")
    (tmp_path / ".harness" / "runs").mkdir(parents=True)
    (tmp_path / ".harness" / "loop.lock").write_text("1\n")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text("kept")
    command = (
        f"echo x > {outside}; echo '[core] fsmonitor = evil' >> .git/config; "
        "mkdir .git/hooks2; echo x > .harness/runs/x; echo x > .harness/loop.lock; rm -rf .git; echo made > made.txt; "
        "echo x > /etc/harness-test; echo /tmp:; ls /tmp"
    )

    result = Sandbox("bwrap").run(command, cwd=tmp_path, timeout=10)

    assert outside.read_text() == "kept"
    assert (tmp_path / ".git" / "config").read_text() == "[core]\n"
    assert not (tmp_path / ".git" / "hooks2").exists()
    assert not (tmp_path / ".harness" / "runs" / "x").exists()
    assert (tmp_path / ".harness" / "loop.lock").read_text() == "1\n"
    assert (tmp_path / "made.txt").read_text() == "made\n"
    assert not Path("/etc/harness-test").exists()
    assert result.output.count("Read-only file system") >= 4
    listed = result.output.split("/tmp:\n")[-1].split()
    # The private /tmp holds HOME, the way to the workspace and the folders mounted back for the
    # harness's own Python: a virtual environment or a clone made under /tmp.
    assert set(listed) <= {"home", tmp_path.parts[2], *_interpreter_folders_under_tmp()}
    assert "home" in listed


def _interpreter_folders_under_tmp() -> set[str]:
    """The names in /tmp of the folders the interpreter and the harness load from."""
    tmp = Path("/tmp").resolve()
    loaded = (sys.prefix, sys.exec_prefix, sys.base_prefix, *sys.path, *map(str, source_folders()))
    paths = {Path(entry).resolve() for entry in (*loaded, *os.environ["PATH"].split(os.pathsep))}
    return {
        path.relative_to(tmp).parts[0] for path in paths if path.is_relative_to(tmp) and path != tmp
    }


@pytest.fixture
def home_with_credentials(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A home folder outside ``/tmp`` (so the private ``/tmp`` does not hide it anyway) holding
    credentials, a tool on ``PATH`` and a project: the harness's ``HOME`` for the test."""
    home = Path(tempfile.mkdtemp(prefix="harness-home-test-", dir="/var/tmp"))
    (home / ".netrc").write_text("machine h login u password canary-netrc\n")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("aws_secret_access_key = canary-aws\n")
    tool = home / ".local" / "bin"
    tool.mkdir(parents=True)
    (tool / "hometool").write_text("#!/bin/sh\necho hometool ran\n")
    (tool / "hometool").chmod(0o755)
    (home / "project").mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", f"{tool}{os.pathsep}{os.environ['PATH']}")
    yield home
    shutil.rmtree(home)


def test_the_harness_home_is_hidden_but_its_path_tools_still_run(
    home_with_credentials: Path, tmp_path: Path
) -> None:
    home = home_with_credentials
    command = (
        f"cat {home}/.netrc {home}/.aws/credentials; echo listing; ls -A {home}; hometool; "
        f"echo planted > {home}/planted.txt"
    )

    result = Sandbox("bwrap").run(command, cwd=tmp_path, timeout=10)

    assert "canary" not in result.output
    assert "hometool ran" in result.output
    listed = result.output.split("listing\n")[1].split("hometool ran")[0].split()
    assert listed == [".local"]  # only the folder of the tool on PATH shows through
    assert not (home / "planted.txt").exists()
    assert result.exit_code != 0  # the write into the hidden home failed


def test_a_workspace_inside_the_hidden_home_stays_writable(home_with_credentials: Path) -> None:
    project = home_with_credentials / "project"

    result = Sandbox("bwrap").run(
        f"echo made > made.txt && cat {home_with_credentials}/.netrc", cwd=project, timeout=10
    )

    assert (project / "made.txt").read_text() == "made\n"
    assert "canary" not in result.output


def test_loop_toml_readonly_shows_a_home_folder_read_only(home_with_credentials: Path) -> None:
    from harness.assemble.build import build_sandbox
    from harness.spec import LoopSpec

    tools = home_with_credentials / ".cargo"
    tools.mkdir()
    (tools / "version.txt").write_text("cargo 1\n")
    loop = home_with_credentials / "project"
    (loop / "loop.toml").write_text(
        'goal = "g"\n[[gates]]\ntype = "command"\ncmd = "true"\n'
        '[sandbox]\nbackend = "bwrap"\nreadonly = ["~/.cargo"]\n'
    )
    config = LoopSpec.from_toml(loop)

    result = build_sandbox(config).run(
        f"cat {tools}/version.txt; echo x > {tools}/planted; cat {home_with_credentials}/.netrc",
        cwd=loop, timeout=10,
    )  # fmt: skip

    assert result.output.startswith("cargo 1\n")
    assert not (tools / "planted").exists()
    assert "canary" not in result.output


def test_readonly_paths_stay_unwritten(tmp_path: Path) -> None:
    progress = tmp_path / "progress.md"
    progress.write_text("# progress\n")

    Sandbox("bwrap", readonly=[progress]).run("echo forged > progress.md", cwd=tmp_path,
                                               timeout=10)  # fmt: skip

    assert progress.read_text() == "# progress\n"


def test_the_network_is_off_unless_enabled(tmp_path: Path) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    server.settimeout(10)  # the accepting thread ends by itself
    accepted: list[object] = []
    accepting = threading.Thread(target=lambda: accepted.append(server.accept()), daemon=True)
    accepting.start()
    probe = f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 3)\""

    closed = Sandbox("bwrap").run(probe, cwd=tmp_path, timeout=10)
    opened = Sandbox("bwrap", network=True).run(probe, cwd=tmp_path, timeout=10)
    accepting.join(timeout=10)  # the connection made may still wait in the backlog
    server.close()

    assert closed.exit_code != 0
    assert "Connection refused" in closed.output
    assert opened.exit_code == 0, opened.output
    assert len(accepted) == 1


@pytest.fixture
def host_unix_server() -> Iterator[tuple[str, list[object]]]:
    """A unix socket server of the host's in a folder of /run; what it accepted."""
    try:
        folder = Path(tempfile.mkdtemp(prefix="harness-test-", dir="/run"))
    except OSError as exc:
        pytest.skip(f"cannot make a folder in /run: {exc}")
    path = str(folder / "service.sock")
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen()
    server.settimeout(10)  # the accepting thread ends by itself
    accepted: list[object] = []
    threading.Thread(target=lambda: accepted.append(server.accept()), daemon=True).start()
    yield path, accepted
    server.close()
    shutil.rmtree(folder)


def test_without_network_the_host_unix_sockets_in_run_are_out_of_reach(
    tmp_path: Path, host_unix_server: tuple[str, list[object]]
) -> None:
    """A service's socket under /run (docker, D-Bus, a database) cannot be reached: the
    sandbox gets an empty /run when the network is off.

    Sockets elsewhere: tests/sandbox/test_host_sockets.py; with ``network`` on, /run is the
    host's (its resolver may need it).
    """
    path, accepted = host_unix_server
    probe = f"python3 -c \"import socket; socket.socket(socket.AF_UNIX).connect('{path}')\""

    closed = Sandbox("bwrap").run(probe, cwd=tmp_path, timeout=10)

    assert closed.exit_code != 0
    assert "FileNotFoundError" in closed.output
    assert accepted == []
    with socket.socket(socket.AF_UNIX) as client:  # the service does listen
        client.connect(path)
    for _ in range(100):
        if accepted:
            break
        time.sleep(0.05)
    assert len(accepted) == 1


def park_in_shm(mb: int) -> str:
    return (
        f"head -c {mb * MB} /dev/zero > /dev/shm/parked; "
        "echo parked=$(wc -c < /dev/shm/parked); echo x > /dev/parked || echo dev-refused"
    )


def test_dev_shm_is_bounded_by_the_memory_limit_without_a_cgroup(tmp_path: Path) -> None:
    """A long-running process (:meth:`Sandbox.wrap`) never has a cgroup: before, 119 MB could
    be parked in /dev/shm under ``memory_mb = 64``, counted by nothing."""
    argv, env = Sandbox("bwrap", limits=Limits(memory_mb=64)).wrap(
        ["/bin/sh", "-c", park_in_shm(119)], cwd=tmp_path
    )
    done = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=30, check=False)  # fmt: skip
    output = done.stdout + done.stderr
    assert f"parked={64 * MB}\n" in output  # cut at the bound
    assert "No space left on device" in output
    assert "dev-refused" in output  # nor can it park anything in /dev itself


def test_dev_shm_is_bounded_by_the_tmp_limit(tmp_path: Path) -> None:
    result = Sandbox("bwrap", limits=Limits(tmp_mb=8)).run(park_in_shm(16), cwd=tmp_path,
                                                           timeout=30)  # fmt: skip
    assert f"parked={8 * MB}\n" in result.output
    assert "No space left on device" in result.output
    assert "dev-refused" in result.output


@pytest.mark.parametrize(
    ("command", "limits", "named"),
    [
        ("yes > big.txt", Limits(file_size_mb=5), "file size limit (5 MB)"),
        ("yes", Limits(output_mb=2), "output limit (2 MB)"),
        ("python3 -c 'x = bytearray(3 << 30)'", Limits(memory_mb=256), "memory limit (256 MB)"),
        ("for i in $(seq 200); do sleep 30 & done; wait", Limits(processes=40),
         "process limit (40)"),
    ],
)  # fmt: skip
def test_a_command_over_a_limit_is_killed_and_the_limit_named(
    tmp_path: Path, command: str, limits: Limits, named: str
) -> None:
    result = Sandbox("bwrap", limits=limits).run(command, cwd=tmp_path, timeout=60)

    assert result.limit == named, result.output[-300:]
    assert result.status == f"killed: {named} exceeded"
    assert result.exit_code is None
    assert not result.timed_out
    assert result.duration < 30
    big = tmp_path / "big.txt"
    assert not big.exists() or big.stat().st_size <= 5 << 20


def test_a_command_within_its_limits_says_no_limit(tmp_path: Path) -> None:
    result = Sandbox("bwrap", limits=Limits(memory_mb=256)).run("echo ok", cwd=tmp_path, timeout=10)

    assert (result.exit_code, result.limit, result.output) == (0, None, "ok\n")


def test_none_is_announced_and_bwrap_is_not() -> None:
    assert Sandbox("none").warning == NOT_SANDBOXED + " (backend 'none')"
    assert Sandbox("bwrap").warning is None
    assert Sandbox("auto").backend == "bwrap"


def test_an_unknown_backend_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="backend: expected one of auto, bwrap, none"):
        Sandbox("jail")  # type: ignore[arg-type]


def test_loop_toml_sandbox_section_is_validated_with_the_field_named(tmp_path: Path) -> None:
    from harness.spec import LoopSpec

    base = 'goal = "g"\n[[gates]]\ntype = "command"\ncmd = "true"\n'
    (tmp_path / "loop.toml").write_text(
        base + '[sandbox]\nbackend = "none"\nnetwork = true\nenv = ["CI"]\n'
        "[sandbox.limits]\nmemory_mb = 512\nprocesses = 64\n"
    )
    config = LoopSpec.from_toml(tmp_path)
    assert (config.sandbox.backend, config.sandbox.network, config.sandbox.env) == (
        "none", True, ["CI"],
    )  # fmt: skip
    assert (config.sandbox.limits.memory_mb, config.sandbox.limits.processes) == (512, 64)
    assert config.sandbox.limits.output_mb == Limits().output_mb

    (tmp_path / "loop.toml").write_text(base + "[sandbox.limits]\nprocesses = 1\n")
    with pytest.raises(ConfigError, match=r"loop.toml: field 'sandbox.limits.processes'"):
        LoopSpec.from_toml(tmp_path)
    (tmp_path / "loop.toml").write_text(base + '[sandbox]\nbackend = "docker2"\n')
    with pytest.raises(ConfigError, match=r"field 'sandbox.backend'"):
        LoopSpec.from_toml(tmp_path)


def test_sandbox_is_a_public_name() -> None:
    import harness

    assert harness.Sandbox is Sandbox
    assert "Sandbox" in harness.__all__


def test_an_interpreter_folder_under_tmp_is_mounted_back_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.sandbox import bwrap

    venv = tmp_path / "venv" / "lib"
    venv.mkdir(parents=True)
    (venv / "inner").mkdir()
    monkeypatch.setattr(sys, "path", [str(venv), str(venv / "inner"), "/usr/lib"])
    bwrap._mounted_back.cache_clear()
    try:
        argv = bwrap.bwrap_argv(
            ["true"], workspace=tmp_path / "ws", cwd=tmp_path / "ws", network=False, tmp_bytes=1
        )
    finally:
        bwrap._mounted_back.cache_clear()
    mounts = [argv[i + 1] for i, part in enumerate(argv) if part == "--ro-bind"]
    assert str(venv.resolve()) in mounts
    assert str((venv / "inner").resolve()) not in mounts  # covered by its folder
    assert "/usr/lib" not in mounts  # outside /tmp: the read-only root shows it already
    assert argv.index(str(venv.resolve())) > argv.index("--tmpfs")  # over the private /tmp
