"""The docker/podman backends against a fake engine: the argv that carries each promise, and
the kill and clean-up paths with real processes (the real engines: test_container_engines.py)."""

from __future__ import annotations

import contextlib
import io
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.core.errors import ConfigError
from harness.sandbox import Limits, Sandbox
from harness.sandbox.container import CONTAINER_HOME, explain_exit
from harness.sandbox.engine import ENGINE_SECONDS
from tests.conftest import git, make_repo, within
from tests.sandbox.fake_engine import FakeEngine, on_path

CANARIES = {
    "OPENAI_API_KEY": "sk-canary-openai",
    "DATABASE_URL": "postgres://u:canary-db@h/db",
    "PLAIN_NAME": "canary-plain",
}
ROOT = Path(__file__).resolve().parents[2]
BEAT = "echo $$ > beat.pid; while :; do echo x >> beat; sleep 0.05; done"


@pytest.fixture
def engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeEngine:
    return on_path(tmp_path / "engine", monkeypatch)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    (folder / ".git").mkdir(parents=True)
    (folder / ".harness" / "runs").mkdir(parents=True)
    (folder / "progress.md").write_text("# progress\n")
    return folder


def pairs(argv: list[str]) -> set[tuple[str, str]]:
    return set(zip(argv, argv[1:], strict=False))


def growing(folder: Path) -> bool:
    time.sleep(0.1)  # a process killed in the middle of a write finishes that write
    before = (folder / "beat").stat().st_size
    time.sleep(0.4)
    return (folder / "beat").stat().st_size != before


def wait_for(path: Path, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.05)


def test_the_run_argv_carries_every_promise(
    engine: FakeEngine, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in CANARIES.items():
        monkeypatch.setenv(name, value)
    extra = tmp_path / "extra"
    extra.mkdir()
    limits = Limits(memory_mb=300, processes=50, file_size_mb=7, tmp_mb=9)
    sandbox = Sandbox("docker", image="img:1", env=["PLAIN_NAME"], limits=limits,
                      readonly=[ws / "progress.md"])  # fmt: skip

    result = sandbox.run("env", cwd=ws, timeout=20, writable=[extra])

    (argv,) = engine.calls("run")
    size = 7 << 20
    assert {("--network", "none"), ("--tmpfs", "/tmp:rw,exec,nosuid,nodev,size=9m"),
            ("--memory", "300m"), ("--memory-swap", "300m"), ("--pids-limit", "50"),
            ("--ulimit", f"fsize={size}:{size}"), ("--ulimit", "core=0:0"),
            ("--cap-drop", "ALL"), ("--security-opt", "no-new-privileges"),
            ("--user", f"{os.getuid()}:{os.getgid()}"), ("-w", str(ws)),
            ("--label", f"harness.pid={os.getpid()}"), ("--pull", "never"),
            ("-e", f"HOME={CONTAINER_HOME}"), ("-e", "PLAIN_NAME"),
            ("--mount", f"type=bind,source={ws},target={ws}"),
            ("--mount", f"type=bind,source={extra},target={extra}"),
            ("--mount", f"type=bind,source={ws / '.git'},target={ws / '.git'},readonly"),
            ("--mount", f"type=bind,source={ws}/.harness/runs,target={ws}/.harness/runs,readonly"),
            ("--mount", f"type=bind,source={ws}/progress.md,target={ws}/progress.md,readonly"),
            } <= pairs(argv)  # fmt: skip
    assert argv[:3] == ["run", "--rm", "-i"]
    assert "--read-only" in argv
    assert argv[argv.index("--name") + 1].startswith(f"harness-{os.getpid()}-")
    assert argv[-4:] == ["/bin/sh", "img:1", "-c", "env"]  # entry point, image, the rest
    assert ("--entrypoint", "/bin/sh") in pairs(argv)
    for wrong in ("--privileged", "--network=host", "host", "--cap-add", "PATH", "-t"):
        assert wrong not in argv
    joined = "\n".join(argv)
    for value in CANARIES.values():  # not even the one passed on purpose: ps shows argv
        assert value not in joined
    assert "OPENAI_API_KEY" not in joined
    assert "DATABASE_URL" not in joined
    # the values still arrive, through the client's environment
    assert result.exit_code == 0, result.output
    assert "PLAIN_NAME=canary-plain" in result.output
    assert f"HOME={CONTAINER_HOME}" in result.output
    assert "canary-db" not in result.output
    assert "sk-canary" not in result.output
    assert engine.calls("rm") == []  # a command that ended on its own leaves nothing to remove
    client = engine.client_env()  # the engine's client gets what it needs and the allowed values
    assert client["PLAIN_NAME"] == "canary-plain"
    assert client["PATH"] == os.environ["PATH"]
    assert "OPENAI_API_KEY" not in client
    assert "DATABASE_URL" not in client


def test_network_on_leaves_the_network_flag_out(engine: FakeEngine, ws: Path) -> None:
    Sandbox("docker", image="img", network=True).run(["true"], cwd=ws, timeout=20)

    (argv,) = engine.calls("run")
    assert "--network" not in argv
    assert "none" not in argv


def test_a_worktree_sees_its_repository_git_folder_read_only(
    engine: FakeEngine, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    tree = tmp_path / "tree"
    git(repo, "worktree", "add", "-q", str(tree))

    result = Sandbox("docker", image="img").run("git status --short", cwd=tree, timeout=20)

    (argv,) = engine.calls("run")
    common = (repo / ".git").resolve()
    assert ("--mount", f"type=bind,source={common},target={common},readonly") in pairs(argv)
    assert f"source={repo},target={repo}" not in "\n".join(argv)  # the rest of it is not shown
    assert result.exit_code == 0, result.output


def test_a_path_with_a_comma_stays_one_mount(engine: FakeEngine, tmp_path: Path) -> None:
    odd = tmp_path / "a,b"
    odd.mkdir()

    Sandbox("docker", image="img").run(["true"], cwd=odd, timeout=20)

    (argv,) = engine.calls("run")
    assert ("--mount", f'type=bind,"source={odd}","target={odd}"') in pairs(argv)


def test_a_missing_folder_names_the_command_not_the_engine(
    engine: FakeEngine, tmp_path: Path
) -> None:
    result = Sandbox("docker", image="img").run(["ls"], cwd=tmp_path / "gone", timeout=20)

    assert result.exit_code == 127
    assert (
        result.output == f"cannot start ls: [Errno 2] No such file or directory: "
        f"{str(tmp_path / 'gone')!r}"
    )
    assert engine.calls("run") == []


def test_the_harness_interpreter_becomes_the_images_python(engine: FakeEngine, ws: Path) -> None:
    result = Sandbox("docker", image="img").run(
        [sys.executable, "-c", "print(6 * 7)"], cwd=ws, timeout=20
    )

    (argv,) = engine.calls("run")
    assert ("--entrypoint", "python3") in pairs(argv)
    assert sys.executable not in argv
    assert result.output == "42\n"


@pytest.mark.parametrize(
    ("command", "timeout", "limits", "named"),
    [
        (BEAT, 1.0, Limits(), None),
        (f"({BEAT}) & sleep 0.5; yes", 30.0, Limits(output_mb=1), "output limit (1 MB)"),
    ],
)
def test_a_command_killed_at_a_bound_has_its_container_removed(
    engine: FakeEngine, ws: Path, command: str, timeout: float, limits: Limits, named: str | None
) -> None:
    result = Sandbox("docker", image="img", limits=limits).run(command, cwd=ws, timeout=timeout)

    assert result.timed_out == (named is None)
    assert result.limit == named
    assert result.exit_code is None
    (run,) = engine.calls("run")
    name = run[run.index("--name") + 1]
    assert engine.calls("rm") == [["rm", "-f", name]]
    assert engine.containers() == []
    assert not growing(ws)  # the container's processes, not only the client, are gone


def test_killing_the_client_alone_would_leave_the_command_running(
    engine: FakeEngine, ws: Path
) -> None:
    """The fake is faithful where it matters: the command outlives a killed client."""
    client = subprocess.Popen(
        ["docker", "run", "--name", "harness-1-1-ab", "-w", str(ws), "--entrypoint", "/bin/sh",
         "img", "-c", BEAT],
        start_new_session=True,
    )  # fmt: skip
    try:
        wait_for(ws / "beat")
        client.kill()
        client.wait()
        assert growing(ws)
    finally:
        subprocess.run(["docker", "rm", "-f", "harness-1-1-ab"], check=True)
    assert not growing(ws)


def test_the_file_size_limit_is_named(engine: FakeEngine, ws: Path) -> None:
    result = Sandbox("docker", image="img", limits=Limits(file_size_mb=2)).run(
        "yes > big.txt", cwd=ws, timeout=30
    )

    assert result.limit == "file size limit (2 MB)"
    assert (1 << 20) < (ws / "big.txt").stat().st_size <= 2 << 20


def test_exit_codes_name_the_limit_behind_them() -> None:
    explain = explain_exit(Limits(memory_mb=64, file_size_mb=3))

    assert explain(128 + signal.SIGXFSZ) == "file size limit (3 MB)"
    assert explain(128 + signal.SIGKILL) == "memory limit (64 MB)"
    assert [explain(code) for code in (0, 1, 2, 125, 126, 127, 143, None)] == [None] * 8


HARNESS = """
import sys
from harness.sandbox import Sandbox
Sandbox("docker", image="img").run(sys.argv[1], cwd=sys.argv[2], timeout=300)
"""


def start_harness(folder: Path) -> subprocess.Popen[bytes]:
    folder.mkdir(exist_ok=True)
    process = subprocess.Popen([sys.executable, "-c", HARNESS, BEAT, str(folder)])  # fmt: skip
    wait_for(folder / "beat")
    return process


def container_of(engine: FakeEngine, pid: int) -> str:
    (argv,) = [a for a in engine.calls("run") if f"harness.pid={pid}" in a]
    return argv[argv.index("--name") + 1]


def test_a_container_dies_with_a_harness_killed_with_sigkill(
    engine: FakeEngine, tmp_path: Path
) -> None:
    crashed = start_harness(tmp_path / "crashed")
    assert growing(tmp_path / "crashed")

    crashed.send_signal(signal.SIGKILL)
    crashed.wait()

    deadline = time.monotonic() + 10  # the watcher looks twice a second
    while engine.containers():
        assert time.monotonic() < deadline, "the container outlived its harness"
        time.sleep(0.1)
    assert not growing(tmp_path / "crashed")
    assert engine.calls("rm") == [["rm", "-f", container_of(engine, crashed.pid)]]


def test_a_live_harness_keeps_its_container(engine: FakeEngine, tmp_path: Path) -> None:
    running = start_harness(tmp_path / "running")
    try:
        time.sleep(1.2)  # more than two looks of the watcher
        assert growing(tmp_path / "running")
        assert engine.calls("rm") == []
    finally:
        running.kill()
        running.wait()


def own_start_time() -> int:
    return int(Path("/proc/self/stat").read_text().rpartition(")")[2].split()[19])


def test_the_next_sandbox_removes_containers_whose_harness_is_gone(engine: FakeEngine) -> None:
    """What the watcher did not get to (it was killed too): left for the next sandbox."""
    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid no process has now
    host, me = socket.gethostname(), f"{os.getpid()}-{own_start_time()}"
    boxes = {
        f"harness-{gone.pid}-1-aaa": [f"harness.host={host}"],  # its harness is gone
        f"harness-{me}-bbb": [f"harness.host={host}"],  # its harness runs: this test
        f"harness-{os.getpid()}-{own_start_time() + 1}-ccc": [f"harness.host={host}"],  # reused pid
        f"harness-{gone.pid}-1-ddd": ["harness.host=elsewhere"],  # another machine's
    }
    inside = {}
    for name, labels in boxes.items():
        inside[name] = subprocess.Popen(["sleep", "60"], start_new_session=True)
        engine.plant(name, inside[name].pid, labels)
    try:
        Sandbox("docker", image="img")

        kept = [f"harness-{me}-bbb", f"harness-{gone.pid}-1-ddd"]
        assert engine.containers() == sorted(kept)
        (rm,) = engine.calls("rm")
        assert rm[:2] == ["rm", "-f"]
        assert sorted(rm[2:]) == sorted(set(boxes) - set(kept))
        removed = [inside[name] for name in boxes if name not in kept]
        assert within(5, lambda: all(p.poll() is not None for p in removed))  # SIGKILL lands
        assert {name: inside[name].poll() is None for name in boxes} == {
            name: name in kept for name in boxes
        }
    finally:
        for process in inside.values():
            process.kill()
            process.wait()


def test_an_engine_without_its_daemon_is_a_config_error_naming_it(
    engine: FakeEngine, ws: Path
) -> None:
    engine.set_mode("down")

    with pytest.raises(ConfigError) as caught:
        Sandbox("docker", image="img")

    assert str(caught.value) == (
        "backend: 'docker' was asked for but `docker info` failed: Cannot connect to the "
        "Docker daemon at unix:///var/run/docker.sock."
    )
    assert engine.calls("run") == []


@pytest.mark.slow
def test_an_engine_that_never_answers_is_a_config_error_not_a_hang(
    engine: FakeEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert ENGINE_SECONDS == 10.0  # a real engine's bound; the fake's is wider (ANSWER_SECONDS)
    monkeypatch.setattr("harness.sandbox.engine.ENGINE_SECONDS", 3.0)
    engine.set_mode("hang")
    start = time.monotonic()

    with pytest.raises(ConfigError, match=r"`docker info` did not answer within 3s$"):
        Sandbox("docker", image="img")

    assert 3.0 <= time.monotonic() - start < 60  # not 1000 s


def test_a_missing_image_is_a_config_error_saying_how_to_get_it(engine: FakeEngine) -> None:
    engine.set_mode("noimage")

    with pytest.raises(ConfigError) as caught:
        Sandbox("docker", image="nope:1")

    assert str(caught.value) == (
        "image: 'nope:1' is not available to docker (Error: No such image: nope:1); "
        "get it first with: docker pull nope:1"
    )


def test_a_missing_engine_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))

    with pytest.raises(ConfigError, match=r"^backend: 'podman' was asked for but podman is not "
                       r"installed \(no 'podman' on PATH\)$"):  # fmt: skip
        Sandbox("podman", image="img")


def test_the_image_is_required_for_an_engine_and_only_for_one(engine: FakeEngine) -> None:
    with pytest.raises(ConfigError, match=r"^image: backend 'docker' needs an image name"):
        Sandbox("docker")
    with pytest.raises(ConfigError, match=r"^image: only the docker and podman backends"):
        Sandbox("none", image="img")
    assert engine.calls() == []  # nothing asked of the engine before the arguments are right


def test_auto_never_picks_a_container(engine: FakeEngine) -> None:
    assert Sandbox("auto").backend in ("bwrap", "none")
    assert engine.calls() == []


def test_the_engine_is_named_in_the_backend(engine: FakeEngine, ws: Path) -> None:
    sandbox = Sandbox("docker", image="img")

    assert sandbox.backend == "docker"
    assert sandbox.warning is None
    assert repr(sandbox) == "Sandbox(backend='docker', image='img', network=False)"


BASE = 'goal = "g"\n[[gates]]\ntype = "command"\ncmd = "true"\n'


def test_loop_toml_names_the_engine_and_its_image(tmp_path: Path) -> None:
    from harness.spec import LoopSpec

    (tmp_path / "loop.toml").write_text(BASE + '[sandbox]\nbackend = "podman"\nimage = "py:3"\n')
    config = LoopSpec.from_toml(tmp_path)
    assert (config.sandbox.backend, config.sandbox.image) == ("podman", "py:3")

    for section, message in (
        ('backend = "docker"', "field 'sandbox.image': required when backend = 'docker'"),
        ('backend = "bwrap"\nimage = "py:3"',
         "field 'sandbox.image': only the docker and podman backends use an image"),
        ('backend = "docker"\nimage = ""', "field 'sandbox.image'"),
        ('backend = "kubernetes"', "field 'sandbox.backend'"),
    ):  # fmt: skip
        (tmp_path / "loop.toml").write_text(BASE + f"[sandbox]\n{section}\n")
        with pytest.raises(ConfigError) as caught:
            LoopSpec.from_toml(tmp_path)
        assert f"{tmp_path / 'loop.toml'}: {message}" in str(caught.value)


def test_an_engine_that_is_down_is_reported_against_loop_toml(
    engine: FakeEngine, tmp_path: Path
) -> None:
    from harness.assemble.build import build_sandbox
    from harness.spec import LoopSpec

    engine.set_mode("down")
    (tmp_path / "loop.toml").write_text(BASE + '[sandbox]\nbackend = "docker"\nimage = "py"\n')
    config = LoopSpec.from_toml(tmp_path)

    with pytest.raises(ConfigError) as caught:
        build_sandbox(config)

    assert str(caught.value) == (
        f"{config.source}: field 'sandbox.backend': 'docker' was asked for but `docker info` "
        "failed: Cannot connect to the Docker daemon at unix:///var/run/docker.sock."
    )


def test_podman_keeps_the_harness_uid_inside_when_rootless(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ws: Path
) -> None:
    fake = on_path(tmp_path / "engine", monkeypatch, "podman")

    result = Sandbox("podman", image="img").run(["true"], cwd=ws, timeout=20)

    (argv,) = fake.calls("run")
    assert (("--userns", "keep-id") in pairs(argv)) == (os.getuid() != 0)
    assert argv[0] == "run"
    assert result.exit_code == 0


def docs_snippet() -> str:
    section = (ROOT / "docs" / "sandbox.md").read_text().split("## Container backends", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert found is not None
    return found[1]


def run_snippet(folder: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(folder)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(docs_snippet(), "docs/sandbox.md", "exec"), {"__name__": "snippet"})
    return printed.getvalue()


def test_the_docs_snippet_runs_where_the_engine_does(
    engine: FakeEngine, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run_snippet(ws, monkeypatch) == "docker exit code 0 2\n\n"  # output, then print
    (argv,) = engine.calls("run")
    assert argv[-4:] == ["/bin/sh", "python:3.12-slim", "-c", "python3 -c 'print(1 + 1)'"]


def test_the_docs_snippet_says_why_where_there_is_no_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))

    assert run_snippet(tmp_path, monkeypatch) == (
        "backend: 'docker' was asked for but docker is not installed (no 'docker' on PATH)\n"
    )


TALK = 'read line; echo "got $line canary=${HARNESS_CANARY:-absent} given=$GIVEN home=$HOME"'


def test_wrap_starts_a_long_running_process_in_a_container_attached_to_its_stdio(
    engine: FakeEngine, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_CANARY", "s3cret")
    sandbox = Sandbox("docker", image="img")
    argv, env = sandbox.wrap(["/bin/sh", "-c", TALK], cwd=ws, env={"GIVEN": "yes"})

    done = subprocess.run(argv, cwd=ws, env=env, input="hello\n", capture_output=True,
                          text=True, timeout=30, start_new_session=True, check=False)  # fmt: skip

    assert done.stdout == "got hello canary=absent given=yes home=/tmp\n"
    assert "HARNESS_CANARY" not in env
    assert env["GIVEN"] == "yes"
    (run,) = engine.calls("run")
    assert ("--network", "none") in pairs(run)
    assert ("-e", "GIVEN") in pairs(run)
    assert "yes" not in run  # the value is not on the command line


def test_stopping_a_wrapped_process_removes_its_container(engine: FakeEngine, ws: Path) -> None:
    argv, env = Sandbox("docker", image="img").wrap(["/bin/sh", "-c", BEAT], cwd=ws)
    client = subprocess.Popen(argv, cwd=ws, env=env, start_new_session=True,
                              stdin=subprocess.PIPE)  # fmt: skip
    wait_for(ws / "beat")
    assert growing(ws)

    os.killpg(client.pid, signal.SIGKILL)  # as the caller stops it
    client.wait()

    deadline = time.monotonic() + 10  # the watcher looks twice a second
    while engine.containers():
        assert time.monotonic() < deadline, "the container outlived its stopped client"
        time.sleep(0.1)
    assert not growing(ws)
    (run,) = engine.calls("run")
    assert engine.calls("rm") == [["rm", "-f", run[run.index("--name") + 1]]]


def test_wrap_in_a_missing_folder_raises_as_starting_it_would(
    engine: FakeEngine, tmp_path: Path
) -> None:
    with pytest.raises(FileNotFoundError, match="No such file or directory"):
        Sandbox("docker", image="img").wrap(["true"], cwd=tmp_path / "gone")
    assert engine.calls("run") == []


def test_an_mcp_server_runs_in_a_container_and_is_gone_after(
    engine: FakeEngine, tmp_path: Path
) -> None:
    from harness.tools import ToolContext
    from harness.tools.mcp import McpServer, mcp_tools

    command = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]
    sandbox = Sandbox("docker", image="img")
    with mcp_tools([McpServer("time", command=command, cwd=str(tmp_path))],
                   sandbox=sandbox) as tools:  # fmt: skip
        running = engine.containers()
        convert = next(t for t in tools if t.name == "mcp__time__convert_time")
        answer = convert.run(
            {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
            ToolContext(workspace=tmp_path),
        )

    assert not answer.is_error, answer.output
    assert "T21:00:00+09:00" in answer.output
    (run,) = engine.calls("run")
    assert running == [run[run.index("--name") + 1]]  # it ran in the container
    assert ("--entrypoint", "python3") in pairs(run)  # the image's Python, not the harness's
    deadline = time.monotonic() + 10
    while engine.containers():
        assert time.monotonic() < deadline, "the server's container outlived its tools"
        time.sleep(0.1)
