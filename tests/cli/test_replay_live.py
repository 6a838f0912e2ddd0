"""`harness replay --live`: the recording answers up to its first divergence (or the end of a
killed run's recording), then the models loop.toml names today answer through litellm's real
HTTP path, and the run goes on to its own end.

Each test runs `harness replay --live` as a process, which loads litellm to build and check the
live models: that load is most of each test's time (about 20 s of 25 s on a loaded two-core
machine, as for the other tests of the real HTTP path); the replay logic itself is tested in
process in tests/replay/test_replay_live.py and tests/models/test_handover.py."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from harness.assemble.launch import recorded_loop
from harness.core.stop import StopReason
from harness.core.trajectory_schema import ModelStep, ToolStep
from harness.observe.trajectory import TRAJECTORY_FILE, Trajectory, read_trajectory
from harness.spec.loop_spec import LoopSpec
from tests.cli.test_cli import harness, harness_here
from tests.conftest import git, make_repo, verdict_entry
from tests.observe.test_trajectory_runs import VERDICT, killed_run
from tests.openai_server import OpenAIServer, Text, ToolCalls

pytestmark = pytest.mark.slow

LOOP = """\
name = "forecast"
goal = "report.txt must hold the forecast"
model = "scripted:script.json"
isolation = "worktree"
max_iterations = 2
[sandbox]
readonly = ["{outside}"]
[[gates]]
type = "command"
name = "written"
cmd = "test -s report.txt"
[critic]
threshold = 8
artifact = "final"
"""


def _go_live(root: Path, server: OpenAIServer) -> None:
    """Today's loop.toml names the test server's model instead of the script."""
    loop = root / "loop.toml"
    text = loop.read_text().replace("scripted:script.json", "openai/test-model")
    options = f'''
        [model_options]
        api_base = "{server.api_base}"
        api_key = "not-a-real-key"
        timeout = 10
        num_retries = 0
        '''
    loop.write_text(text + textwrap.dedent(options))


def _recorded(tmp_path: Path) -> tuple[Path, str]:
    """A run recorded with a scripted model: it reads the forecast from a file outside the
    repository (shown read-only to the sandbox), writes it down and passes."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "forecast.txt").write_text("sunny\n")
    script = [
        {"name": "run_shell", "arguments": {"command": f"cat {outside}/forecast.txt"}},
        {"name": "write_file", "arguments": {"path": "report.txt", "content": "sunny\n"}},
        "report.txt says sunny",
        verdict_entry(9, ["it says the forecast"]),
    ]
    root = make_repo(
        tmp_path / "project",
        {
            "loop.toml": LOOP.format(outside=outside),
            "script.json": json.dumps(script),
            ".gitignore": ".harness/\nprogress/\n",
        },
    )
    result = recorded_loop(LoopSpec.from_toml(root / "loop.toml"), run_id="rec00001").run()
    assert result.stop_reason is StopReason.PASSED, result.message
    return root, "rec00001"


def _replayed(root: Path, stdout: str) -> Path:
    return root / ".harness" / "runs" / stdout.split("as run ")[1].split(")")[0]


def test_the_live_model_answers_from_the_diverging_observation_on(tmp_path: Path) -> None:
    root, run = _recorded(tmp_path)
    (tmp_path / "outside" / "forecast.txt").write_text("rainy\n")  # changed since the recording
    with OpenAIServer(deadline=120) as server:
        _go_live(root, server)
        write = json.dumps({"path": "report.txt", "content": "rainy\n"})
        server.queue(
            ToolCalls((("call_w", "write_file", write),)), Text("report.txt says rainy"), VERDICT
        )
        result = harness("replay", run, "--live", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    bodies = [request.body for request in server.requests]
    assert len(bodies) == 3  # the author's two calls after the divergence, and the critic's
    first = bodies[0]["messages"]
    assert first[-1]["role"] == "tool"
    assert "rainy" in first[-1]["content"]  # the observation as it is now
    assert "sunny" not in json.dumps(first)
    assert [m["role"] for m in first].count("assistant") == 1  # the recorded run_shell call
    assert [t["function"]["name"] for t in bodies[2]["tools"]] == ["verdict"]
    lines = result.stdout.splitlines()
    assert lines[0].endswith("1 round(s), PASSED")
    assert lines[1] == "first divergence at round 1, step 1: the observation of run_shell differs"
    assert lines[-4] == (
        "the live model took over at round 1, model call 2: the observation of run_shell "
        "differs (step 1)"
    )
    assert lines[-3] == "the run ended PASSED after round 1 (verdict 9/10, passed)"
    kept = lines[-2].removeprefix("its work is on branch ").removesuffix(f" in {root}")
    assert lines[-1] == (
        f"the loop's progress ({root / 'progress' / 'forecast.md'}) is the replay's now, the "
        "earlier one set aside as forecast.previous.md"
    )
    assert kept.startswith("harness/forecast.")
    assert git(root, "show", f"{kept}:report.txt") == "rainy"  # the live round's commit
    records = read_trajectory(_replayed(root, result.stdout) / TRAJECTORY_FILE)
    models = [r.model for r in records if isinstance(r, ModelStep)]
    assert models == [f"replay:{run}", *["openai/test-model"] * 3]
    written = [r.arguments for r in records if isinstance(r, ToolStep) and r.name == "write_file"]
    assert written == [json.dumps({"path": "report.txt", "content": "rainy\n"})]  # not sunny
    # the live run's own recording replays too, here (it was made in a clone now removed)
    again = harness("replay", _replayed(root, result.stdout).name, "--repo", ".", cwd=root)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "no divergence" in again.stdout


def test_a_live_replay_that_never_diverges_calls_no_model(tmp_path: Path) -> None:
    root, run = _recorded(tmp_path)
    with OpenAIServer(deadline=120) as server:
        _go_live(root, server)
        result = harness("replay", run, "--live", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    assert server.requests == []
    lines = result.stdout.splitlines()
    assert lines[1:] == [
        "no divergence: every observation, gate, verdict and outcome as recorded",
        "the live model was not called: the recording answered every call",
        "the run ended PASSED after round 1 (verdict 9/10, passed)",
    ]


def test_a_killed_run_replayed_live_goes_on_past_the_cut_and_passes(tmp_path: Path) -> None:
    root, path = killed_run(tmp_path)
    (tmp_path / "gate" / "released").touch()  # today the shell command returns at once
    with OpenAIServer(deadline=120) as server:
        _go_live(root, server)
        server.queue(Text("a.txt says one"))
        result = harness("replay", path.parent.name, "--live", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    (request,) = server.requests  # the call the killed run never made, and no other
    messages = request.body["messages"]
    assert [m["role"] for m in messages[-4:]] == ["assistant", "tool", "assistant", "tool"]
    assert messages[-1]["content"] == "[exit code 0]\n(no output)"  # run_shell, played today
    lines = result.stdout.splitlines()
    assert lines[0].endswith("1 round(s), PASSED")  # past the cut, to the run's own end
    assert lines[1:] == [
        "the recording ends at round 1, step 2 (the run was cut off): the replay played it up "
        "to there",
        "no divergence up to there: every observation, gate, verdict and outcome as recorded",
        "the live model took over at round 1, model call 3: the recording ends there (the "
        "recorded run was cut off)",
        "the run ended PASSED after round 1 (no verdict)",
        "its work stayed in the replay's clone, which is removed: the run has no branch",
    ]
    replayed = Trajectory.load(_replayed(root, result.stdout))
    assert [r.model for r in replayed.records if isinstance(r, ModelStep)][-1] == (
        "openai/test-model"
    )


@pytest.mark.parametrize(
    ("model", "critic", "field"),
    [
        ("nosuchprovider/model-x", "", "model: unknown model 'nosuchprovider/model-x'"),
        (
            "openai/test-model",
            'model = "nosuchprovider/critic-x"\n',
            "critic.model: unknown model 'nosuchprovider/critic-x'",
        ),
    ],
)
def test_a_bad_model_for_a_live_replay_is_named_before_anything_runs(
    tmp_path: Path, model: str, critic: str, field: str
) -> None:
    root, run = _recorded(tmp_path)
    loop = root / "loop.toml"
    text = loop.read_text().replace("scripted:script.json", model)
    loop.write_text(
        text.replace("[critic]\n", f"[critic]\n{critic}") + "[model_options]\napi_key = 'k'\n"
    )
    result = harness_here("replay", run, "--live", cwd=root)  # the model library loaded once
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"{loop}: {field}" in result.stderr
    assert "harness-replay-" not in result.stderr  # the user's loop.toml, not the replay's copy
    assert [p.name for p in (root / ".harness" / "runs").iterdir()] == [run]  # nothing ran
    plain = harness("replay", run, cwd=root)  # without --live the models are not asked for
    assert plain.returncode == 0, plain.stdout + plain.stderr
