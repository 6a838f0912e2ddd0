"""A container image's own folder (``workdir``) and one long-lived container per workspace for
the agent's commands (``keep``), against the fake engine (tests/sandbox/fake_engine.py)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.core.errors import ConfigError
from harness.sandbox import Sandbox
from tests.sandbox.fake_engine import FakeEngine, on_path


@pytest.fixture
def engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeEngine:
    return on_path(tmp_path / "engine", monkeypatch)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    (folder / ".git").mkdir(parents=True)
    (folder / "pkg").mkdir()
    return folder


def mounts(argv: list[str]) -> list[str]:
    return [argv[i + 1] for i, word in enumerate(argv) if word == "--mount"]


def after(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def exec_calls(engine: FakeEngine) -> list[list[str]]:
    """The commands run in a kept container (the start-up probes ``exec NAME true`` left out)."""
    return [call for call in engine.calls("exec") if "-i" in call]


def test_the_workspace_is_mounted_at_the_images_folder(engine: FakeEngine, ws: Path) -> None:
    sandbox = Sandbox("docker", image="img", workdir="/testbed")

    result = sandbox.run(["pwd"], cwd=ws / "pkg", workspace=ws, timeout=20)

    assert result.exit_code == 0, result.output
    assert result.output.strip() == str(ws / "pkg")  # the fake's host folder behind /testbed/pkg
    (run,) = engine.calls("run")
    assert f"type=bind,source={ws},target=/testbed" in mounts(run)
    assert f"type=bind,source={ws},target={ws}" not in mounts(run)
    assert f"type=bind,source={ws / '.git'},target=/testbed/.git,readonly" in mounts(run)
    assert after(run, "-w") == "/testbed/pkg"


def test_words_naming_workspace_paths_follow_it_and_others_do_not(
    engine: FakeEngine, ws: Path, tmp_path: Path
) -> None:
    sandbox = Sandbox("docker", image="img", workdir="/testbed")
    outside = tmp_path / "ws-other" / "f.py"  # shares the workspace's name as a prefix

    sandbox.run(["cat", str(ws / "pkg" / "a.py"), str(outside), str(ws), "-q"], cwd=ws, timeout=20)

    (run,) = engine.calls("run")
    assert run[-4:] == ["/testbed/pkg/a.py", str(outside), "/testbed", "-q"]


def test_without_workdir_the_workspace_stays_at_its_own_path(engine: FakeEngine, ws: Path) -> None:
    Sandbox("docker", image="img").run(["pwd"], cwd=ws, timeout=20)

    (run,) = engine.calls("run")
    assert f"type=bind,source={ws},target={ws}" in mounts(run)
    assert after(run, "-w") == str(ws)


def test_the_agents_commands_share_one_kept_container(engine: FakeEngine, ws: Path) -> None:
    sandbox = Sandbox("docker", image="img", workdir="/testbed", keep=True)
    try:
        outputs = [
            sandbox.run(
                command, cwd=ws / "pkg", workspace=ws, timeout=20, session=True
            ).output.strip()
            for command in ("pwd", "echo one > one.txt", "cat one.txt")
        ]

        assert outputs == [str(ws / "pkg"), "", "one"]
        (start,) = engine.calls("run")  # one container for the three commands
        name = after(start, "--name")
        assert engine.containers() == [name]  # still there between commands
        assert after(start, "--entrypoint") == "sleep"
        assert start[-2:] == ["img", "infinity"]
        assert "--rm" in start
        assert "-i" not in start  # nothing is fed to the keep-alive
        assert f"type=bind,source={ws},target=/testbed" in mounts(start)
        execs = exec_calls(engine)
        assert [call[call.index(name) + 1 :] for call in execs] == [
            ["/bin/sh", "-c", "pwd"],
            ["/bin/sh", "-c", "echo one > one.txt"],
            ["/bin/sh", "-c", "cat one.txt"],
        ]
        assert {after(call, "-w") for call in execs} == {"/testbed/pkg"}
    finally:
        sandbox.close()
    assert engine.containers() == []


def test_the_gates_commands_each_get_a_throw_away_container(engine: FakeEngine, ws: Path) -> None:
    """Not a session command, or one that needs a writable folder of its own: not kept."""
    sandbox = Sandbox("docker", image="img", workdir="/testbed", keep=True)
    scratch = ws.parent / "scratch"
    scratch.mkdir()
    try:
        sandbox.run("true", cwd=ws, timeout=20)
        sandbox.run("true", cwd=ws, timeout=20, session=True, writable=[scratch])

        runs = engine.calls("run")
        assert len(runs) == 2
        assert all(run[:4] == ["run", "--rm", "-i", "--name"] for run in runs)
        assert engine.calls("exec") == []
        assert engine.containers() == []
    finally:
        sandbox.close()


def test_each_workspace_has_its_own_kept_container(
    engine: FakeEngine, ws: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    sandbox = Sandbox("docker", image="img", workdir="/testbed", keep=True)
    try:
        for folder in (ws, other, ws, other):
            assert sandbox.run("pwd", cwd=folder, timeout=20, session=True).output.strip() == str(
                folder
            )
        assert len(engine.calls("run")) == 2
        assert len(engine.containers()) == 2
    finally:
        sandbox.close()
    assert engine.containers() == []


def test_a_command_killed_at_its_timeout_takes_the_kept_container_and_the_next_starts_one(
    engine: FakeEngine, ws: Path
) -> None:
    sandbox = Sandbox("docker", image="img", keep=True)
    try:
        first = sandbox.run("true", cwd=ws, timeout=20, session=True)
        killed = sandbox.run("sleep 30", cwd=ws, timeout=1, session=True)
        assert (first.exit_code, killed.timed_out) == (0, True)
        (start,) = engine.calls("run")
        assert engine.calls("rm") == [["rm", "-f", after(start, "--name")]]
        assert engine.containers() == []

        again = sandbox.run("echo back", cwd=ws, timeout=20, session=True)

        assert again.output.strip() == "back"
        assert len(engine.calls("run")) == 2
        assert engine.containers() == [after(engine.calls("run")[1], "--name")]
    finally:
        sandbox.close()


def test_a_kept_container_that_does_not_start_is_a_result_saying_so(
    engine: FakeEngine, ws: Path
) -> None:
    sandbox = Sandbox("docker", image="img", keep=True)
    engine.set_mode("norun")

    result = sandbox.run("true", cwd=ws, timeout=20, session=True)

    assert result.exit_code == 127
    assert result.output.startswith(
        "cannot start docker: the workspace's kept container of img did not start: "
    )
    assert "`docker run` exited with 125" in result.output
    assert engine.containers() == []


HARNESS = """
import sys, time
from harness.sandbox import Sandbox
sandbox = Sandbox("docker", image="img", keep=True)
sandbox.run("true", cwd=sys.argv[1], timeout=30, session=True)
print("started", flush=True)
time.sleep(300)
"""


def test_a_kept_container_dies_with_a_harness_killed_with_sigkill(
    engine: FakeEngine, ws: Path
) -> None:
    harness = subprocess.Popen(
        [sys.executable, "-c", HARNESS, str(ws)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert harness.stdout is not None
        assert harness.stdout.readline().strip() == "started"
        (name,) = engine.containers()
        harness.send_signal(signal.SIGKILL)
        harness.wait()
        deadline = time.monotonic() + 10  # the watcher looks twice a second
        while engine.containers():
            assert time.monotonic() < deadline, "the kept container outlived its harness"
            time.sleep(0.1)
        assert ["rm", "-f", name] in engine.calls("rm")
    finally:
        harness.kill()
        harness.wait()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"workdir": "/testbed"}, "workdir: only the docker and podman backends use one"),
        ({"keep": True}, "keep: only the docker and podman backends use one"),
    ],
)
def test_workdir_and_keep_are_for_containers_only(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Sandbox("none", **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("workdir", ["testbed", "/", "/testbed/"])
def test_a_workdir_must_be_an_absolute_folder(engine: FakeEngine, workdir: str) -> None:
    with pytest.raises(ConfigError, match="workdir: expected an absolute path below /"):
        Sandbox("docker", image="img", workdir=workdir)


BASE = 'goal = "g"\n[[gates]]\ntype = "command"\ncmd = "true"\n'


def test_loop_toml_takes_workdir_and_keep(tmp_path: Path) -> None:
    from harness.spec import LoopSpec

    (tmp_path / "loop.toml").write_text(
        BASE + '[sandbox]\nbackend = "docker"\nimage = "i"\nworkdir = "/testbed"\nkeep = true\n'
    )
    settings = LoopSpec.from_toml(tmp_path).sandbox
    assert (settings.workdir, settings.keep) == ("/testbed", True)

    for section, message in (
        ('backend = "bwrap"\nkeep = true', "field 'sandbox.keep': only the docker and podman"),
        ('backend = "none"\nworkdir = "/t"', "field 'sandbox.workdir': only the docker and podman"),
        ('backend = "docker"\nimage = "i"\nworkdir = "testbed"', "field 'sandbox.workdir'"),
    ):
        (tmp_path / "loop.toml").write_text(BASE + f"[sandbox]\n{section}\n")
        with pytest.raises(ConfigError) as caught:
            LoopSpec.from_toml(tmp_path)
        assert f"{tmp_path / 'loop.toml'}: {message}" in str(caught.value)


@pytest.mark.parametrize(("image_python", "runs"), [(None, "python3"), ("/env/bin/python", None)])
def test_the_harness_interpreter_becomes_the_images_own(
    engine: FakeEngine, ws: Path, image_python: str | None, runs: str | None
) -> None:
    sandbox = Sandbox("docker", image="img", image_python=image_python, keep=True)
    try:
        sandbox.run([sys.executable, "-V"], cwd=ws, timeout=20)
        sandbox.run([sys.executable, "-V"], cwd=ws, timeout=20, session=True)
    finally:
        sandbox.close()

    (run, _) = engine.calls("run")  # the throw-away one, then the kept one
    (kept,) = exec_calls(engine)
    assert after(run, "--entrypoint") == (runs or image_python)
    assert kept[-2:] == [runs or image_python, "-V"]


def test_a_loops_kept_container_ends_with_its_run(engine: FakeEngine, tmp_path: Path) -> None:
    """While the loop is still held: the run itself removes the container, not the collector."""
    from harness.assemble.build import build_loop
    from harness.core.sink import NULL_SINK
    from harness.models.base import ToolCall
    from harness.models.scripted import ScriptedModel
    from harness.spec import LoopSpec

    (tmp_path / "work").mkdir()
    (tmp_path / "loop.toml").write_text(
        'goal = "g"\nworkspace = "work"\nisolation = "none"\nmax_iterations = 1\n'
        '[critic]\nenabled = false\n[[gates]]\ntype = "command"\ncmd = "true"\n'
        '[sandbox]\nbackend = "docker"\nimage = "img"\nworkdir = "/testbed"\nkeep = true\n'
    )
    model = ScriptedModel([ToolCall("run_shell", {"command": "echo in"}), "done"])
    loop = build_loop(LoopSpec.from_toml(tmp_path), events=NULL_SINK, model=model)

    result = loop.run()

    assert result.passed
    (start,) = [run for run in engine.calls("run") if after(run, "--entrypoint") == "sleep"]
    assert engine.containers() == []
    assert ["rm", "-f", after(start, "--name")] in engine.calls("rm")
    assert loop.settings.agent.sandbox is not None  # still held, so not collected
