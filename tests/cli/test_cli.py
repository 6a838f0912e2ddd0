"""The harness command as a person runs it: a real subprocess, real files, real exit codes."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.cli.main import main
from tests.conftest import make_repo, verdict_entry

ROOT = Path(__file__).resolve().parents[2]


def harness(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    full_env.pop("HARNESS_MODEL", None)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "harness.cli.main", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=240,  # generous: a loaded machine starts litellm slowly
    )


def harness_here(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``harness ARGS`` as :func:`harness` runs it, but in this process: for the checks that end
    before a run starts (a model refused, a goal too long), which would otherwise each import
    the model library anew (about five seconds of CPU). Its output, the exit code ``main``
    returns, and the environment and folder it had are given back."""
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(cwd)
        patch.delenv("HARNESS_MODEL", raising=False)
        for name, value in (env or {}).items():
            patch.setenv(name, value)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
    return subprocess.CompletedProcess(["harness", *args], code, out.getvalue(), err.getvalue())


def write_loop(folder: Path, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "loop.toml"
    path.write_text(textwrap.dedent(body))
    return path


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('goal = "x"\nunknown_thing = 1\n', "unknown_thing"),
        ('goal = "x"\nmax_iterations = "many"\n', "max_iterations"),
        ("max_iterations = 3\n", "goal"),
        ('goal = "x"\n[budget]\ntokens = -5\n', "budget.tokens"),
    ],
)
def test_broken_loop_toml_exits_2_naming_the_field(tmp_path: Path, body: str, field: str) -> None:
    write_loop(tmp_path, body)
    result = harness("run", str(tmp_path), "--model", "scripted:none.json", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert f"'{field}'" in result.stderr
    assert "loop.toml" in result.stderr


def test_missing_model_exits_2_naming_model(tmp_path: Path) -> None:
    write_loop(
        tmp_path, 'goal = "x"\nisolation = "none"\n[[gates]]\ntype = "command"\ncmd = "true"\n'
    )
    result = harness("run", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 2
    assert "model" in result.stderr


def test_a_bad_name_in_harness_sandbox_env_exits_2_before_anything_runs(tmp_path: Path) -> None:
    (tmp_path / "script.json").write_text(json.dumps(["Done."]))
    write_loop(
        tmp_path,
        'goal = "x"\nisolation = "none"\nmodel = "scripted:script.json"\n'
        '[[gates]]\ntype = "command"\ncmd = "true"\n',
    )
    result = harness("run", cwd=tmp_path, env={"HARNESS_SANDBOX_ENV": "CI A-B"})
    assert result.returncode == 2, result.stderr
    assert "HARNESS_SANDBOX_ENV: 'A-B' is not the name of a variable" in result.stderr
    assert not (tmp_path / ".harness" / "runs").exists()


def test_cap_reached_exits_3_with_an_escalation_report(tmp_path: Path) -> None:
    project = make_repo(tmp_path / "project", {"answer.txt": "no\n"})
    (tmp_path / "script.json").write_text(json.dumps(["I tried.", "I tried again."]))
    write_loop(
        project,
        """\
        name = "answer"
        goal = "answer.txt must say yes"
        model = "scripted:../script.json"
        max_iterations = 2
        patience = 5
        [critic]
        enabled = false
        [[gates]]
        type = "command"
        name = "says yes"
        cmd = "grep -q yes answer.txt"
        """,
    )
    subprocess.run(["git", "add", "-A"], cwd=project, check=True)
    subprocess.run(["git", "commit", "-qm", "loop"], cwd=project, check=True)
    result = harness("run", "--quiet", cwd=project)
    assert result.returncode == 3, result.stderr
    report = project / "progress" / "answer.escalation.md"
    assert report.is_file()
    text = report.read_text()
    assert "MAX_ITERATIONS" in text
    assert "### Round 2" in text
    status = harness("status", cwd=project)
    assert status.returncode == 0
    assert "answer: escalated, round 2 of 2" in status.stdout


def test_env_model_is_used_and_flag_beats_it(tmp_path: Path) -> None:
    (tmp_path / "good.json").write_text(
        json.dumps(
            [{"name": "write_file", "arguments": {"path": "out.txt", "content": "yes"}}, "done"]
        )
    )
    write_loop(
        tmp_path,
        """\
        goal = "out.txt says yes"
        isolation = "none"
        model = "scripted:missing-file.json"
        [critic]
        enabled = false
        [[gates]]
        type = "command"
        cmd = "grep -q yes out.txt"
        """,
    )
    via_env = harness(
        "run", "--quiet", cwd=tmp_path, env={"HARNESS_MODEL": f"scripted:{tmp_path / 'good.json'}"}
    )
    assert via_env.returncode == 0, via_env.stderr
    (tmp_path / "out.txt").unlink()
    via_flag = harness(
        "run",
        "--quiet",
        "--restart",
        "--model",
        f"scripted:{tmp_path / 'good.json'}",
        cwd=tmp_path,
        env={"HARNESS_MODEL": "scripted:/nonexistent.json"},
    )
    assert via_flag.returncode == 0, via_flag.stderr


def test_help_does_not_import_litellm() -> None:
    code = "import sys; from harness.cli.main import build_parser; build_parser(); import harness; print('litellm' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert out.stdout.strip() == "False"


def test_init_scaffolds_a_loop_that_validates(tmp_path: Path) -> None:
    result = harness("init", "bugfix", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "skills" / "bugfix" / "SKILL.md").is_file()
    assert (tmp_path / "progress").is_dir()
    from harness.spec import LoopSpec

    config = LoopSpec.from_toml(tmp_path)
    assert config.name == "bugfix"
    again = harness("init", "bugfix", cwd=tmp_path)
    assert again.returncode == 2
    assert "already exists" in again.stderr


def test_the_configured_checklist_seeds_progress_and_the_agent_can_tick_it(tmp_path: Path) -> None:
    (tmp_path / "script.json").write_text(json.dumps([
        {"name": "update_progress", "arguments": {"done": ["write the answer"]}},
        {"name": "write_file", "arguments": {"path": "out.txt", "content": "yes"}}, "done"]))  # fmt: skip
    write_loop(
        tmp_path,
        """\
        name = "answer"
        goal = "out.txt says yes"
        isolation = "none"
        model = "scripted:script.json"
        checklist = ["write the answer", "check it"]
        [critic]
        enabled = false
        [[gates]]
        type = "command"
        cmd = "grep -q yes out.txt"
        """,
    )
    result = harness("run", "--quiet", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "progress" / "answer.md").read_text()
    assert "- [x] write the answer" in text
    assert "- [ ] check it" in text


def test_loop_toml_window_override_triggers_compaction(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("\n".join(f"line {i} of a long log" for i in range(600)))
    reads = [{"name": "read_file", "arguments": {"path": "big.txt"}} for _ in range(4)]
    (tmp_path / "script.json").write_text(json.dumps([
        *reads, {"name": "write_file", "arguments": {"path": "out.txt", "content": "yes"}}, "done"]))  # fmt: skip
    write_loop(
        tmp_path,
        """\
        name = "window"
        goal = "out.txt says yes"
        isolation = "none"
        model = "scripted:script.json"
        [agent]
        compaction = "mask_observations"
        context_window = 12000
        compaction_threshold = 0.5
        [critic]
        enabled = false
        [[gates]]
        type = "command"
        cmd = "grep -q yes out.txt"
        """,
    )
    result = harness("run", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    compactions = [e for e in events if e["kind"] == "compaction"]
    assert compactions
    assert all(e["tokens_after"] < e["tokens_before"] for e in compactions)
    assert compactions[0]["strategy"] == "mask_observations"


def test_the_skills_threshold_is_the_critics_pass_mark_unless_the_file_sets_one(
    tmp_path: Path,
) -> None:
    (tmp_path / "SKILL.md").write_text(
        "---\nname: strict\nthreshold: 9.5\n---\n\n## Success\n\nPerfect.\n"
    )
    (tmp_path / "script.json").write_text(json.dumps([
        {"name": "write_file", "arguments": {"path": "out.txt", "content": "yes"}}, "done",
        verdict_entry(9, ["good, not perfect"], ["polish"])]))  # fmt: skip
    write_loop(
        tmp_path,
        """\
        goal = "out.txt says yes"
        isolation = "none"
        skill = "SKILL.md"
        model = "scripted:script.json"
        max_iterations = 1
        [[gates]]
        type = "command"
        cmd = "grep -q yes out.txt"
        """,
    )
    result = harness("run", "--quiet", cwd=tmp_path)
    assert result.returncode == 3, result.stderr  # 9 < 9.5
    assert "critic 9.0/10" in (tmp_path / "progress" / "loop.md").read_text()


def test_config_errors_name_the_file_and_leave_no_empty_run_folder(tmp_path: Path) -> None:
    write_loop(
        tmp_path,
        """\
        goal = "x"
        model = "openai/gpt-4o-mini"
        [model_options]
        timeout = 0
        [critic]
        artifact = "file"
        [[gates]]
        type = "pytest"
        timeout = -1
        """,
    )
    result = harness("run", cwd=tmp_path)
    assert result.returncode == 2
    assert "field 'gates[0].timeout'" in result.stderr
    assert "pytest.timeout" not in result.stderr  # the union tag is not shown as a field
    (tmp_path / "loop.toml").write_text(
        'goal = "x"\n[critic]\nartifact = "file"\n[[gates]]\ntype = "command"\ncmd = "true"\n'
    )
    cross = harness("run", cwd=tmp_path)
    assert cross.returncode == 2
    assert "loop.toml: field 'critic.file': required when critic.artifact = 'file'" in cross.stderr
    (tmp_path / "loop.toml").write_text(
        'goal = "x"\nmodel = "openai/gpt-4o-mini"\n[model_options]\ntimeout = 0\n'
        '[[gates]]\ntype = "command"\ncmd = "true"\n'
    )
    options = harness("run", cwd=tmp_path)
    assert options.returncode == 2
    assert "loop.toml: model_options.timeout" in options.stderr
    assert not (tmp_path / ".harness" / "runs").exists()


def test_status_lists_every_loop_and_reports_a_broken_one_without_hiding_others(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "progress"
    folder.mkdir()
    (folder / "good.md").write_text("# Progress: good\n\nGoal: x\nStatus: passed\nRound: 2 of 5\n")
    (folder / "good.previous.md").write_text("# Progress: good\n\nGoal: x\nStatus: passed\n")
    (folder / "bad.md").write_text("# Progress: bad\n\nRound: abc\n")
    result = harness("status", str(folder), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout.count("good: passed, round 2 of 5") == 1
    assert "bad: cannot be read" in result.stdout
    assert "bad.md:3" in result.stdout


def test_report_html_into_a_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "script.json").write_text(json.dumps(["nothing"]))
    write_loop(
        tmp_path,
        """\
        goal = "x"
        model = "scripted:script.json"
        isolation = "none"
        max_iterations = 1
        [[gates]]
        type = "command"
        cmd = "false"
        """,
    )
    assert harness("run", "--quiet", cwd=tmp_path).returncode == 3
    (run_dir,) = (tmp_path / ".harness" / "runs").iterdir()
    result = harness("report", run_dir.name, "--html", "missing/dir/r.html", cwd=tmp_path)
    assert result.returncode == 2
    assert "--html missing/dir/r.html: cannot write" in result.stderr
