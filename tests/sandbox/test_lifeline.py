"""Without a sandbox (backend ``none``), what the harness started ends with it: a harness killed
with SIGKILL leaves no command, no external agent and nothing they started in their session
running in a workspace that a resumed run is about to work in."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from harness.sandbox import Sandbox
from harness.sandbox.limits import LIFELINE_SECONDS
from tests.cli.test_cli import harness
from tests.conftest import alive, git, make_repo, processes_naming, within

# Writes its own pid, then one it starts in the background, then waits: two processes to find.
SPAWNS = 'echo $$ > "$1/first"; sleep 61 & echo $! > "$1/second"; wait'


def _wait_for(path: Path, seconds: float = 30.0) -> int:
    """The pid written to ``path``."""
    assert within(seconds, lambda: path.exists() and path.read_text().strip()), f"{path} unwritten"
    return int(path.read_text())


def _gone_within(pids: list[int], seconds: float) -> bool:
    return within(seconds, lambda: not any(alive(pid) for pid in pids))


def _kill_and_check(holder: subprocess.Popen[bytes], folder: Path) -> None:
    pids = [_wait_for(folder / "first"), _wait_for(folder / "second")]
    assert all(alive(pid) for pid in pids)
    try:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
        assert _gone_within(pids, LIFELINE_SECONDS * 10), "outlived the harness"
    finally:
        for pid in pids:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def _holder(tmp_path: Path, body: str) -> subprocess.Popen[bytes]:
    """A Python process standing for the harness: it runs ``body`` with ``sandbox`` and
    ``folder`` (``tmp_path``) set."""
    script = f"""\
        import subprocess, sys
        from pathlib import Path
        from harness.sandbox import Sandbox
        folder = Path({str(tmp_path)!r})
        sandbox = Sandbox(backend="none")
        SPAWNS = {SPAWNS!r}
    """
    program = textwrap.dedent(script) + textwrap.dedent(body)
    return subprocess.Popen([sys.executable, "-c", program], start_new_session=True)


def test_a_command_and_what_it_started_end_when_the_harness_is_killed(tmp_path: Path) -> None:
    holder = _holder(
        tmp_path, "sandbox.run(['sh', '-c', SPAWNS, 'sh', str(folder)], cwd=folder, timeout=120)"
    )
    _kill_and_check(holder, tmp_path)


def test_a_wrapped_program_ends_when_the_harness_is_killed(tmp_path: Path) -> None:
    """:meth:`Sandbox.wrap`, as an external agent is started: by its caller, in a session of
    its own."""
    body = """\
        argv, env = sandbox.wrap(['sh', '-c', SPAWNS, 'sh', str(folder)], cwd=folder)
        subprocess.Popen(argv, cwd=folder, env=env, start_new_session=True).wait()
    """
    _kill_and_check(_holder(tmp_path, body), tmp_path)


def watchers() -> list[int]:
    """The lifeline watchers of this process's commands still running."""
    return processes_naming(f"kill -0 {os.getpid()} ")


def test_the_watcher_leaves_with_its_command_and_the_harness_lives_on(tmp_path: Path) -> None:
    sandbox = Sandbox(backend="none")
    started = time.monotonic()
    result = sandbox.run("echo made", cwd=tmp_path, timeout=30)
    assert (result.exit_code, result.output.strip()) == (0, "made")  # nothing of the watcher's
    assert time.monotonic() - started < 5
    argv, env = sandbox.wrap(["sh", "-c", "sleep 1"], cwd=tmp_path)
    program = subprocess.Popen(argv, cwd=tmp_path, env=env, start_new_session=True)
    watching = False
    while not watching and program.poll() is None:
        watching = bool(watchers())
        time.sleep(0.01)
    assert watching, "no watcher while the program ran"
    assert program.wait() == 0
    assert _gone_within(watchers(), LIFELINE_SECONDS * 10)


def test_a_wrapped_program_not_in_a_session_of_its_own_takes_no_one_with_it(
    tmp_path: Path,
) -> None:
    """The watcher kills the command's own session's group, never the one it was started in."""
    body = """\
        neighbour = subprocess.Popen(['sleep', '60'])  # in its group, as a pipeline's other end
        (folder / 'neighbour').write_text(str(neighbour.pid))
        argv, env = sandbox.wrap(['sh', '-c', SPAWNS, 'sh', str(folder)], cwd=folder)
        subprocess.Popen(argv, cwd=folder, env=env).wait()
    """
    holder = _holder(tmp_path, body)
    pids = [_wait_for(tmp_path / name) for name in ("neighbour", "first", "second")]
    try:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
        time.sleep(LIFELINE_SECONDS * 5)
        assert all(alive(pid) for pid in pids)  # not its session: not the watcher's to end
    finally:
        for pid in pids:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
def test_harness_run_killed_mid_session_leaves_no_agent_writing_in_the_worktree(
    tmp_path: Path,
) -> None:
    """`harness run` with an external agent and no sandbox, killed with SIGKILL (its process
    group, as a terminal's kill of the job would): the agent stops writing."""
    ticks = tmp_path / "ticks"
    agent = tmp_path / "agent.sh"
    agent.write_text(
        f'echo $$ > "{tmp_path}/first"\nwhile :; do echo tick >> "{ticks}"; sleep 0.05; done\n'
    )
    project = make_repo(tmp_path / "project", {"answer.txt": "no\n"})
    (project / "loop.toml").write_text(
        textwrap.dedent(f"""\
        name = "answer"
        goal = "answer.txt must say yes"
        model = "scripted:../script.json"
        [agent]
        runner = "command"
        command = ["sh", "{agent}"]
        [sandbox]
        backend = "none"
        [critic]
        enabled = false
        [[gates]]
        type = "command"
        name = "says yes"
        cmd = "grep -qx yes answer.txt"
        """)
    )
    (tmp_path / "script.json").write_text('{"rounds": {"1": ["done"]}}')
    git(project, "add", "-A")
    git(project, "commit", "-qm", "loop")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    run = subprocess.Popen(
        [sys.executable, "-m", "harness.cli.main", "run", "--quiet"],
        cwd=project, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, env={**os.environ, "TMPDIR": str(temporary)},
    )  # fmt: skip
    try:
        assert within(60, ticks.exists), "the agent never started"
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()
    agent_pid = _wait_for(tmp_path / "first")
    try:
        assert _gone_within([agent_pid], LIFELINE_SECONDS * 10), "the agent outlived the harness"
        written = ticks.stat().st_size
        time.sleep(LIFELINE_SECONDS * 3)
        assert ticks.stat().st_size == written, "something went on writing after the harness died"
    finally:
        if alive(agent_pid):
            os.kill(agent_pid, signal.SIGKILL)
    # the agent's home and the sandbox's, left by the killed run, go with `harness clean`
    left = sorted(p.name for p in temporary.iterdir() if not p.name.endswith(".held"))
    assert [name[:-8] for name in left] == ["harness-agent-", "harness-home-"], left
    cleaned = harness("clean", cwd=project, env={"TMPDIR": str(temporary)})
    assert cleaned.returncode == 0, cleaned.stderr
    for name in left:
        line = f"tidy: removed {temporary / name} (a temporary folder its process left when it was killed)"
        assert line in cleaned.stdout.splitlines(), cleaned.stdout
    assert list(temporary.iterdir()) == []
