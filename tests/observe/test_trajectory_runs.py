"""Trajectories of whole runs: litellm's real HTTP path recorded byte for byte, and a run killed
with SIGKILL mid-session leaving every complete step readable."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from harness.core.redact import REDACTED
from harness.core.trajectory_schema import ModelStep, RoundBegin, RunBegin, ToolStep, parse_record
from harness.observe.trajectory import TRAJECTORY_FILE, Trajectory, read_trajectory
from tests.cli.test_cli import harness
from tests.conftest import make_repo
from tests.openai_server import OpenAIServer, Text, ToolCalls

pytestmark = pytest.mark.slow

SECRET = "planted-canary-4e7d1c9b"
VERDICT = ToolCalls(
    (("call_v", "verdict", json.dumps({"reasons": ["correct"], "fixes": [], "score": 9})),)
)


def _compact(body: dict[str, object]) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def _run_folder(root: Path) -> Path:
    (folder,) = (root / ".harness" / "runs").iterdir()
    return folder


def test_the_trajectory_holds_every_request_as_the_server_received_it(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text(f"the café's deploy key is {SECRET}\n")
    with OpenAIServer(deadline=120) as server:
        (tmp_path / "loop.toml").write_text(
            textwrap.dedent(f"""\
            name = "http"
            goal = "out.txt must say yes"
            model = "openai/test-model"
            isolation = "none"
            max_iterations = 1
            [model_options]
            api_base = "{server.api_base}"
            api_key = "not-a-real-key"
            timeout = 10
            num_retries = 0
            [[gates]]
            type = "command"
            name = "says yes"
            cmd = "grep -qx yes out.txt"
            """)
        )
        write = json.dumps({"path": "out.txt", "content": "yes\n"})
        server.queue(
            ToolCalls((("call_1", "read_file", json.dumps({"path": "notes.txt"})),)),
            ToolCalls((("call_2", "write_file", write),), content="Writing it."),
            Text("I wrote yes to out.txt."),
            VERDICT,
        )
        result = harness("run", "--quiet", cwd=tmp_path, env={"DEPLOY_KEY": SECRET})
    assert result.returncode == 0, result.stdout + result.stderr
    bodies = [request.body for request in server.requests]
    assert len(bodies) == 4
    raw = [request.raw for request in server.requests]
    run = _run_folder(tmp_path)
    calls = list(Trajectory.load(run).calls())
    assert [call.step.role for call in calls] == ["author", "author", "author", "critic"]
    for call, body, sent in zip(calls, bodies, raw, strict=True):
        # byte for byte: the client sends compact UTF-8 JSON, and so is the rebuilt body
        assert _compact(call.body()) == sent
        assert call.body() == body
        assert call.step.request.max_tokens == body["max_tokens"]
    assert "café".encode() in raw[1]  # not escaped: a body re-encoded otherwise would differ
    seen = calls[1].messages[-1]
    assert seen["role"] == "tool"
    assert seen["content"].endswith(f"the café's deploy key is {REDACTED}")  # the line as read
    assert calls[1].step.reply.content == "Writing it."
    assert calls[1].step.usage.prompt_tokens == 20  # as the server reported it
    written = "".join(p.read_text() for p in run.rglob("*") if p.is_file())
    assert SECRET not in written
    assert "not-a-real-key" not in written


def _killable_project(root: Path) -> Path:
    """A project whose run blocks in its second tool call (a shell command that waits until a
    file in a folder beside the project is made, a folder the sandbox shows read-only) and is
    then killed; a replay made after the file is there runs through."""
    gate = root.parent / "gate"
    gate.mkdir(parents=True)
    release = gate / "released"
    script = {
        "rounds": {
            "1": [
                {"name": "write_file", "arguments": {"path": "a.txt", "content": "one\n"}},
                {"name": "run_shell", "arguments": {"command": f"test -f {release} || sleep 60"}},
                "never reached",
            ]
        }
    }
    make_repo(
        root,
        {
            "script.json": json.dumps(script),
            "loop.toml": textwrap.dedent(f"""\
                name = "killed"
                goal = "a.txt must say one"
                model = "scripted:script.json"
                isolation = "none"
                max_iterations = 1
                [agent]
                shell_timeout = 120
                [sandbox]
                readonly = ["{gate}"]
                [critic]
                enabled = false
                [[gates]]
                type = "command"
                name = "one"
                cmd = "grep -qx one a.txt"
                """),
            ".gitignore": ".harness/\nprogress/\n",
        },
    )
    return root


def killed_run(tmp_path: Path) -> tuple[Path, Path]:
    """The killable project, and its trajectory once the run was killed in its second tool
    call (``SIGKILL`` to its whole process group); ``tmp_path / "gate" / "released"`` lets a
    replay's shell command through."""
    root = _killable_project(tmp_path / "project")
    process = subprocess.Popen(
        [sys.executable, "-m", "harness.cli.main", "run", "--quiet"],
        cwd=root,
        env={**os.environ, "HARNESS_MODEL": ""},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        path = None
        while time.monotonic() < deadline:  # until the second model call is on record
            runs = list((root / ".harness" / "runs").glob(f"*/{TRAJECTORY_FILE}"))
            if runs and sum(isinstance(r, ModelStep) for r in read_trajectory(runs[0])) >= 2:
                path = runs[0]
                break
            time.sleep(0.05)
        assert path is not None, "the run never reached its second model call"
        os.killpg(process.pid, signal.SIGKILL)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    return root, path


def test_a_run_killed_mid_session_leaves_a_trajectory_whose_every_line_parses(
    tmp_path: Path,
) -> None:
    _, path = killed_run(tmp_path)
    text = path.read_text()
    complete = text[: text.rfind("\n") + 1].splitlines()
    records = [parse_record(line) for line in complete]  # every complete line parses
    assert records == read_trajectory(path)[: len(records)]
    kinds = [r.kind for r in records]
    assert kinds[:6] == [
        "run_start", "round_start", "session_start", "model_call", "tool_call", "model_call"
    ]  # fmt: skip
    assert isinstance(records[0], RunBegin)
    assert isinstance(records[1], RoundBegin)
    write = records[4]
    assert isinstance(write, ToolStep)
    assert write.name == "write_file"
    second = records[5]
    assert isinstance(second, ModelStep)
    assert second.reply.tool_calls[0].name == "run_shell"
    assert "round_end" not in kinds  # the round never ended


def test_the_replay_of_a_killed_run_plays_it_up_to_where_it_stopped(tmp_path: Path) -> None:
    root, path = killed_run(tmp_path)
    (tmp_path / "gate" / "released").touch()  # today the shell command returns at once
    result = harness("replay", path.parent.name, cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"replay of run {path.parent.name} (recorded again as run ")
    assert lines[0].endswith("0 round(s), CANCELLED")
    assert lines[1] == (
        "the recording ends at round 1, step 2 (the run was cut off): the replay played it up "
        "to there"
    )
    assert lines[2].startswith("no divergence")
    assert "first divergence" not in result.stdout
    replayed = root / ".harness" / "runs" / lines[0].split("as run ")[1].split(")")[0]
    records = read_trajectory(replayed / TRAJECTORY_FILE)
    steps = [(r.name, r.step) for r in records if isinstance(r, ToolStep)]
    assert steps == [("write_file", 1), ("run_shell", 2)]  # both recorded calls, played again
    assert sum(isinstance(r, ModelStep) for r in records) == 2


def test_a_replay_that_ends_the_killed_round_early_diverges(tmp_path: Path) -> None:
    """A recording cut off after three model calls of its round, where the replay's agent
    answers at the second: the round ended before the recording's end, a divergence."""
    root, path = killed_run(tmp_path)
    lines = path.read_text().splitlines()
    (second,) = [n for n, line in enumerate(lines) if '"run_shell"' in line]
    answer = json.loads(lines[second])
    answer["reply"] = {"content": "done early", "tool_calls": [], "reasoning": None}
    lines[second] = json.dumps(answer)
    path.write_text("\n".join([*lines, lines[second]]) + "\n")  # a third call, never reached
    result = harness("replay", path.parent.name, cwd=root)
    assert result.returncode == 3, result.stdout + result.stderr
    assert "the recording ends at round 1, step 3 (the run was cut off)\n" in result.stdout
    assert "played it" not in result.stdout
    assert result.stdout.rstrip().endswith(
        "first divergence at round 1: the round ended after 2 model call(s); the recording holds 3"
    )
