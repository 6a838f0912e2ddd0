"""``harness bench swebench`` on ten real instances from nine real repositories.

The instances (``swebench/instances.jsonl``) are upstream bug fixes in the official record
format: the real ``patch`` and ``test_patch``, ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` as the
published files hold them (JSON-encoded strings), and each ``base_commit`` the upstream commit
id, held by a shallow bare clone in ``swebench/repos``. The oracles check the dataset: ``gold``
resolves every instance, ``empty`` none.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from harness.core.errors import ConfigError
from harness.scale.swebench_instance import load_instances
from harness.scale.swebench_summary import wilson
from tests.cli.test_cli import harness, harness_here

HERE = Path(__file__).parent / "swebench"
INSTANCES = HERE / "instances.jsonl"
ANSWERING = Path(__file__).with_name("answering_agent.py")
IDS = [instance.instance_id for instance in load_instances(INSTANCES)]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("repos")
    for packed in (HERE / "repos").glob("*.git.tar.gz"):
        with tarfile.open(packed) as archive:
            archive.extractall(folder, filter="data")
    return folder


def bench(repos: Path, out: Path, model: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """The benchmark through the CLI, as a user runs it (ten loops: minutes, not seconds)."""
    command = [
        sys.executable, "-m", "harness.cli.main", "bench", "swebench", str(INSTANCES),
        "--repos", str(repos), "--out", str(out), "--model", model, "--max-iterations", "1",
        "--quiet", *extra,
    ]  # fmt: skip
    return subprocess.run(command, cwd=out.parent, capture_output=True, text=True, timeout=1200)


def files(patch: str) -> set[str]:
    """The paths a patch writes."""
    return {line[6:] for line in patch.splitlines() if line.startswith("+++ b/")}


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_dataset_is_ten_instances_of_nine_repositories() -> None:
    instances = load_instances(INSTANCES)
    assert len(instances) == 10
    assert len({instance.repo for instance in instances}) == 9
    assert all(instance.FAIL_TO_PASS and instance.patch for instance in instances)


@pytest.mark.timeout(1200)
def test_empty_resolves_none(repos: Path, tmp_path: Path) -> None:
    empty = bench(repos, tmp_path / "empty", "empty", "--workers", "2")
    assert empty.returncode == 0, empty.stdout + empty.stderr
    assert "resolved    0/10 (0.0%" in empty.stdout
    results = lines(tmp_path / "empty" / "results.jsonl")
    assert [(r["resolved"], r["stop_reason"]) for r in results] == [(False, "MAX_ITERATIONS")] * 10
    assert {p["model_patch"] for p in lines(tmp_path / "empty" / "preds.jsonl")} == {""}


def test_an_agent_that_edits_the_test_instead_of_the_code_is_not_resolved(
    repos: Path, tmp_path: Path
) -> None:
    (instance,) = [i for i in load_instances(INSTANCES) if i.repo == "benjaminp/six"]
    one = tmp_path / "one.jsonl"
    one.write_text(instance.model_dump_json() + "\n")
    cheat = "sed -i 's/assertRaises(AssertionError)/assertRaises(Exception)/' test_six.py"
    rounds = {"1": [{"name": "run_shell", "arguments": {"command": cheat}}, "Done."]}
    script = tmp_path / "cheat.json"
    script.write_text(json.dumps({"rounds": rounds}))
    out = tmp_path / "out"

    result = harness(
        "bench", "swebench", str(one), "--repos", str(repos), "--out", str(out),
        "--model", f"scripted:{script}", "--max-iterations", "1", "--quiet", cwd=tmp_path,
    )  # fmt: skip

    assert result.returncode == 0, result.stdout + result.stderr
    assert "resolved    0/1 (0.0%" in result.stdout
    (prediction,) = lines(out / "preds.jsonl")
    assert "+++ b/test_six.py" in str(prediction["model_patch"])  # the edit was made, not counted
    traj = json.loads((out / "trajs" / f"{instance.instance_id}.traj").read_text())
    assert [step["action"] for step in traj["trajectory"]] == [
        "run_shell " + json.dumps({"command": cheat})
    ]
    assert traj["info"]["submission"] == prediction["model_patch"]
    assert traj["info"]["exit_status"] == "MAX_ITERATIONS"
    assert traj["history"][-1] == {"role": "assistant", "content": "Done."}


def test_attempts_give_pass_at_k_and_one_prediction_per_instance(
    repos: Path, tmp_path: Path
) -> None:
    (instance,) = [i for i in load_instances(INSTANCES) if i.repo == "benjaminp/six"]
    one = tmp_path / "one.jsonl"
    one.write_text(instance.model_dump_json() + "\n")
    out = tmp_path / "out"

    result = harness(
        "bench", "swebench", str(one), "--repos", str(repos), "--out", str(out),
        "--model", "gold", "--max-iterations", "1", "--attempts", "2", "--quiet", cwd=tmp_path,
    )  # fmt: skip

    assert result.returncode == 0, result.stdout + result.stderr
    assert "ended       2/2 attempts" in result.stdout
    assert "pass        @1 100.0% (0.0%-100.0%), @2 100.0% (0.0%-100.0%)" in result.stdout
    results = lines(out / "results.jsonl")
    assert [(r["attempt"], r["resolved"]) for r in results] == [(1, True), (2, True)]
    assert results[0]["branch"] != results[1]["branch"]  # each attempt on a branch of its own
    (prediction,) = lines(out / "preds.jsonl")
    assert prediction["instance_id"] == instance.instance_id
    summary = json.loads((out / "bench.json").read_text())
    assert (summary["attempts"], summary["resolved"], summary["ended"]) == (2, 1, 2)
    assert [p["estimate"] for p in summary["pass_at"]] == [1.0, 1.0]


def test_two_runners_attempt_the_same_instance_under_the_same_tests_side_by_side(
    repos: Path, tmp_path: Path
) -> None:
    """The harness's agent writes the reference patch; a real program that only answers (through
    the gateway, with the same model) changes nothing: one side resolves, the other does not,
    and each side's figures, predictions and trajectories are its own."""
    (instance,) = [i for i in load_instances(INSTANCES) if i.repo == "benjaminp/six"]
    one = tmp_path / "one.jsonl"
    one.write_text(instance.model_dump_json() + "\n")
    out = tmp_path / "out"
    agent = f"{shlex.quote(sys.executable)} {shlex.quote(str(ANSWERING))} {{task_file}}"

    result = harness(
        "bench", "swebench", str(one), "--repos", str(repos), "--out", str(out),
        "--model", "gold", "--max-iterations", "1", "--runner", "harness,command",
        "--agent-command", agent, "--quiet", cwd=tmp_path,
    )  # fmt: skip

    assert result.returncode == 0, result.stdout + result.stderr
    ours, theirs = (lines(out / side / "results.jsonl") for side in ("harness", "command"))
    assert [(r["runner"], r["resolved"], r["stop_reason"]) for r in ours + theirs] == [
        ("harness", True, "PASSED"), ("command", False, "MAX_ITERATIONS"),
    ]  # fmt: skip
    (mine,), (other,) = ours, theirs
    assert other["tokens"] > 0  # the program's one request went through the gateway
    table = result.stdout.splitlines()
    assert table[:3] == ["model       gold", "instances   1 (1 attempt per runner)", ""]
    assert table[3].split() == [
        "runner", "resolved", "tokens", "cost", "time", "cost/resolved", "time/resolved", "rounds",
    ]  # fmt: skip
    seconds = f"{mine['seconds']:.1f}s"
    assert table[4].split() == ["harness", "1/1", str(mine["tokens"]), "$0.0000", seconds,
                                "$0.0000", seconds, "1.00"]  # fmt: skip
    assert table[5].split() == [
        "command", "0/1", str(other["tokens"]), "$0.0000", f"{other['seconds']:.1f}s", "-", "-",
        "1.00",
    ]  # fmt: skip
    assert [line for line in table if line.startswith(("preds", "results", "bench"))] == [
        f"{name}: {out / side / name}"
        for side in ("harness", "command")
        for name in ("preds.jsonl", "results.jsonl", "bench.json")
    ] + [f"bench.json: {out / 'bench.json'} (side by side)"]
    summary = json.loads((out / "bench.json").read_text())
    assert [(r["runner"], r["resolved"], r["attempts"]) for r in summary["runners"]] == [
        ("harness", 1, 1), ("command", 0, 1),
    ]  # fmt: skip
    assert summary["runners"][0]["seconds_per_resolved"] == mine["seconds"]
    assert summary["runners"][1]["seconds_per_resolved"] is None
    assert [(s["runner"], s["resolved"]) for s in summary["summaries"]] == [
        ("harness", 1), ("command", 0),
    ]  # fmt: skip
    (gold,) = lines(out / "harness" / "preds.jsonl")
    (nothing,) = lines(out / "command" / "preds.jsonl")
    assert (gold["model_name_or_path"], nothing["model_name_or_path"]) == (
        "harness+gold", "command+gold",
    )  # fmt: skip
    assert files(str(gold["model_patch"])) == files(instance.patch)
    assert nothing["model_patch"] == ""
    assert not (out / "preds.jsonl").exists()  # each side's record in its own folder
    for side in ("harness", "command"):
        assert (out / side / "trajs" / f"{instance.instance_id}.traj").is_file()
    traj = json.loads((out / "command" / "trajs" / f"{instance.instance_id}.traj").read_text())
    assert traj["info"]["model_stats"]["api_calls"] == 1
    assert traj["history"][-1]["tool_calls"][0]["function"]["name"] == "write_file"  # not done
    for side, passed in ((mine, True), (other, False)):  # one gate, the held-out tests, for both
        events = lines(Path(str(side["trajectory"])))
        gates = [(e["name"], e["passed"]) for e in events if e["kind"] == "gate_report"]
        assert gates == [("held-out pytest", passed)]


def test_a_runner_that_is_not_installed_resolves_nothing_beside_one_that_works(
    repos: Path, tmp_path: Path
) -> None:
    (instance,) = [i for i in load_instances(INSTANCES) if i.repo == "benjaminp/six"]
    one = tmp_path / "one.jsonl"
    one.write_text(instance.model_dump_json() + "\n")
    out = tmp_path / "out"
    path = os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    if shutil.which("claude", path=path):
        pytest.skip("claude is on the test's PATH: its absence is what this test runs")

    result = harness(
        "bench", "swebench", str(one), "--repos", str(repos), "--out", str(out),
        "--model", "gold", "--max-iterations", "1", "--runner", "harness,claude-code",
        "--quiet", cwd=tmp_path, env={"PATH": path},
    )  # fmt: skip

    assert result.returncode == 0, result.stdout + result.stderr
    table = result.stdout.split("\nrunner ")[-1].splitlines()  # the comparison's rows
    assert table[1].split()[:2] == ["harness", "1/1"]
    assert table[2].split()[:2] == ["claude-code", "0/1"]
    assert table[2].split()[5:7] == ["-", "-"]  # nothing resolved: no cost or time per one
    (harness_result,) = lines(out / "harness" / "results.jsonl")
    assert harness_result["resolved"] is True
    (missing,) = lines(out / "claude-code" / "results.jsonl")
    assert (missing["resolved"], missing["status"]) == (False, "error")
    task = f"{instance.instance_id}.claude-code"
    record = json.loads((out / "batch" / "tasks" / task / "record.json").read_text())
    assert "needs 'claude', which is not on PATH; install it with: npm install" in record["message"]
    cause = f"error: {task}: {record['message']}"  # on the terminal, and in the batch's report
    assert cause in result.stdout.splitlines()
    assert f"error: {instance.instance_id}.harness" not in result.stdout
    report = harness("report", str(out / "batch"), cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert cause in report.stdout.splitlines()


def test_a_model_that_cannot_be_called_exits_2_before_any_instance_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    (tmp_path / "repos").mkdir()  # no clone: nothing reaches the network if the check is missed
    result = harness_here(
        "bench", "swebench", str(INSTANCES), "--model", "gpt-4o-mini", "--out",
        str(tmp_path / "out"), "--repos", str(tmp_path / "repos"), cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    cause = "harness: --model: model 'gpt-4o-mini' (openai) needs an API key: set OPENAI_API_KEY"
    assert cause in result.stderr
    assert "resolved" not in result.stdout
    assert not (tmp_path / "out").exists()  # no instance was cloned, prepared or run


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--runner", "harness,cursor"], "--runner: expected one of harness, claude-code"),
        (["--runner", "codex,harness,codex"], "--runner: codex named twice"),
        (["--runner", "harness,command"], "--agent-command: required by --runner command"),
        (["--agent-command", "agent {task_file}"], "--agent-command: only runner command"),
        (["--runner", "command", "--agent-command", "'"], "--agent-command: cannot be split"),
    ],
)
def test_bad_runner_flags_exit_2_naming_the_flag(
    tmp_path: Path, flags: list[str], message: str
) -> None:
    result = harness(
        "bench", "swebench", str(INSTANCES), "--model", "gold", "--out", str(tmp_path / "out"),
        *flags, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr
    assert not (tmp_path / "out").exists()


EDITABLE = (
    'echo ran >> "$UV_CACHE_DIR/../setup-runs" && '
    'site="$(python -c "import sysconfig; print(sysconfig.get_path(\'purelib\'))")" && '
    'echo "$PWD" > "$site/_project.pth"'
)
"""A set-up that works offline: counts itself, installs the project as an editable path."""


def test_instances_of_one_repository_and_environment_commit_share_one_environment(
    repos: Path, tmp_path: Path
) -> None:
    first, second = [i for i in load_instances(INSTANCES) if i.repo == "mahmoud/boltons"]
    assert first.environment_setup_commit != second.environment_setup_commit
    second = second.model_copy(update={"environment_setup_commit": first.base_commit})
    two = tmp_path / "two.jsonl"
    two.write_text(first.model_dump_json() + "\n" + second.model_dump_json() + "\n")
    table = tmp_path / "envs.toml"
    table.write_text(f"[[env]]\nrepo = \"mahmoud/boltons\"\nsetup = '''{EDITABLE}'''\n")
    out = tmp_path / "out"

    result = harness(
        "bench", "swebench", str(two), "--repos", str(repos), "--out", str(out), "--model",
        "gold", "--max-iterations", "1", "--envs", str(table), "--workers", "2", "--quiet",
        cwd=tmp_path,
    )  # fmt: skip

    assert result.returncode == 0, result.stdout + result.stderr
    assert "resolved    2/2 (100.0%" in result.stdout
    envs = Path(os.environ["XDG_STATE_HOME"]) / "harness" / "envs"
    assert (envs / "cache" / "setup-runs").read_text() == "ran\n"  # made once, then reused
    (made,) = [path for path in (envs / "commits").iterdir() if path.is_dir()]
    assert made.name.startswith(first.base_commit[:16])
    assert json.loads((made / "ready").read_text())["commit"] == first.base_commit
    python = made / "venv" / "bin" / "python"
    for line in lines(out / "results.jsonl"):
        events = lines(Path(str(line["trajectory"])))
        (start,) = [event for event in events if event["kind"] == "run_start"]
        origin = f"[env] setup at {first.base_commit[:12]}"
        note = f"commands run in the project's Python environment ({origin}): {python}"
        assert note in start["notes"], start["notes"]


@pytest.mark.timeout(300)
def test_the_benchmark_runs_on_the_ray_backend(repos: Path, tmp_path: Path) -> None:
    """Two instances (a Ray start is tens of seconds here): gold resolves both on Ray workers,
    which get each instance's folder shipped around its repository, nothing shared."""
    pytest.importorskip("ray", reason="the Ray backend needs the ray extra")
    chosen = [
        i for i in load_instances(INSTANCES) if i.repo in ("hukkin/tomli", "jmespath/jmespath.py")
    ]
    subset = tmp_path / "two.jsonl"
    subset.write_text("".join(i.model_dump_json() + "\n" for i in chosen))
    out = tmp_path / "out"
    command = [
        sys.executable, "-m", "harness.cli.main", "bench", "swebench", str(subset),
        "--repos", str(repos), "--out", str(out), "--model", "gold", "--max-iterations", "1",
        "--backend", "ray", "--workers", "2", "--quiet",
    ]  # fmt: skip

    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=280)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "resolved    2/2 (100.0%" in result.stdout
    summary = json.loads((out / "batch" / "summary.json").read_text())
    assert summary["backend"] == "ray"
    results = lines(out / "results.jsonl")
    assert [(r["instance_id"], r["resolved"]) for r in results] == [
        (i.instance_id, True) for i in chosen
    ]
    for result_line, instance in zip(results, chosen, strict=True):
        trajectory = Path(str(result_line["trajectory"]))  # the run's files came back
        assert trajectory.is_relative_to(out / "instances" / instance.instance_id / ".harness")
        assert any('"kind": "run_end"' in line for line in trajectory.read_text().splitlines())
    for prediction, instance in zip(lines(out / "preds.jsonl"), chosen, strict=True):
        assert files(str(prediction["model_patch"])) == files(instance.patch)  # branch fetched


@pytest.mark.timeout(1200)
def test_gold_resolves_every_instance_and_a_killed_benchmark_reruns_each_once(
    repos: Path, tmp_path: Path
) -> None:
    """The gold patches resolve all ten instances, through a benchmark killed after its first
    instances ended and run again (one test: each whole benchmark run is minutes here)."""
    out = tmp_path / "gold"
    command = [
        sys.executable, "-m", "harness.cli.main", "bench", "swebench", str(INSTANCES),
        "--repos", str(repos), "--out", str(out), "--model", "gold", "--max-iterations", "1",
        "--workers", "2", "--quiet",
    ]  # fmt: skip
    first = subprocess.Popen(command, cwd=tmp_path, start_new_session=True)
    records = out / "batch" / "tasks"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any(
        '"passed"' in path.read_text() for path in records.glob("*/record.json")
    ):
        time.sleep(0.2)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    ended_before = [
        p.parent.name for p in records.glob("*/record.json") if '"passed"' in p.read_text()
    ]
    assert 0 < len(ended_before) < 10

    gold = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=900)

    assert gold.returncode == 0, gold.stdout + gold.stderr
    assert "resolved    10/10 (100.0%" in gold.stdout
    starts = {
        name: json.loads((records / name / "record.json").read_text())["starts"] for name in IDS
    }
    assert all(starts[name] == 1 for name in ended_before)  # an ended instance is not run again
    results = lines(out / "results.jsonl")
    assert [(r["instance_id"], r["resolved"]) for r in results] == [(i, True) for i in IDS]
    predictions = lines(out / "preds.jsonl")
    assert [p["instance_id"] for p in predictions] == IDS
    assert {p["model_name_or_path"] for p in predictions} == {"gold"}
    for prediction, instance in zip(predictions, load_instances(INSTANCES), strict=True):
        assert files(str(prediction["model_patch"])) == files(instance.patch), instance.instance_id
    summary = json.loads((out / "bench.json").read_text())
    assert (summary["resolved"], summary["ended"], summary["mean_rounds"]) == (10, 10, 1.0)


def test_bad_instance_files_name_the_record_and_the_field(tmp_path: Path) -> None:
    (first, *_) = INSTANCES.read_text().splitlines()
    record = json.loads(first)
    broken = tmp_path / "broken.jsonl"
    broken.write_text(first + "\n" + json.dumps({**record, "FAIL_TO_PASS": "[not json"}) + "\n")

    result = harness("bench", "swebench", str(broken), "--model", "gold", cwd=tmp_path)

    assert result.returncode == 2
    assert f"{broken}:2" in result.stderr
    assert "FAIL_TO_PASS" in result.stderr


@pytest.mark.parametrize("commit", ["--upload-pack=touch pwned", "HEAD", "e66cade3 ", "E66CADE3"])
def test_an_environment_commit_that_is_no_commit_id_is_refused_naming_it(
    tmp_path: Path, commit: str
) -> None:
    (first, *_) = INSTANCES.read_text().splitlines()
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps({**json.loads(first), "environment_setup_commit": commit}) + "\n")
    with pytest.raises(ConfigError) as caught:
        load_instances(broken)
    assert str(caught.value).startswith(f"{broken}:1: field 'environment_setup_commit'")
    assert (
        load_instances(INSTANCES)[0].environment_setup_commit
        == json.loads(first)["environment_setup_commit"]
    )  # a commit id, as the published records give it, is taken


def test_a_missing_repository_is_named(tmp_path: Path) -> None:
    (tmp_path / "empty-repos").mkdir()
    result = harness(
        "bench", "swebench", str(INSTANCES), "--repos", str(tmp_path / "empty-repos"),
        "--model", "gold", "--out", str(tmp_path / "out"), cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2
    assert "no clone of mahmoud/boltons" in result.stderr


@pytest.mark.parametrize(
    ("successes", "trials", "interval"),
    [
        (0, 0, (0.0, 0.0)),
        (0, 10, (0.0, 0.2775)),
        (10, 10, (0.7225, 1.0)),
        (5, 10, (0.2366, 0.7634)),
    ],
)
def test_the_resolve_rate_interval_is_wilsons(
    successes: int, trials: int, interval: tuple[float, float]
) -> None:
    assert wilson(successes, trials) == interval
