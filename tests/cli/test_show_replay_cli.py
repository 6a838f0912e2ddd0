"""`harness show` and `harness replay` from the command line: a trajectory read step by step, a
recording kept in a project's tests and replayed in another clone, and neither command loading
litellm."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.cli.test_cli import harness
from tests.conftest import git, make_repo
from tests.replay.test_replay import LOOP, SCRIPT


def _recorded(tmp_path: Path) -> tuple[Path, str]:
    root = make_repo(
        tmp_path / "project",
        {
            "loop.toml": LOOP,
            "script.json": json.dumps(SCRIPT),
            "notes.txt": "a note\n",
            ".gitignore": ".harness/\nprogress/\n",
        },
    )
    result = harness("run", "--quiet", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    (run,) = (root / ".harness" / "runs").iterdir()
    return root, run.name


def test_show_prints_each_step_of_a_round(tmp_path: Path) -> None:
    root, run = _recorded(tmp_path)
    shown = harness("show", run, "--round", "1", cwd=root)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].startswith(f"run {run}: out.txt must say yes")
    titles = [line.strip() for line in lines if not line.strip().startswith("│")]
    assert [t.split(" ·")[0] for t in titles if t.startswith(("tool ", "gate ", "verdict "))] == [
        "tool write_file (step 1)",
        "tool read_file (step 2)",
        "tool run_shell (step 3)",
        "gate says yes: passed (`says yes` passed)",
        "verdict 9/10, threshold 8: passed",
    ]
    body = shown.stdout
    assert '│ arguments: {"path": "notes.txt"}' in body
    assert "a note" in body  # the whole observation
    assert '│   → read_file {"path": "notes.txt"}' in body  # the reply that asked for it
    assert "session 2: critic" in body
    assert "\x1b" not in body  # not a terminal: plain text, no pager
    report = harness("report", run, "--html", "page.html", cwd=root)
    assert report.returncode == 0, report.stderr
    page = (root / "page.html").read_text()
    section = page[page.index("<h2>Trajectory</h2>") :]
    assert "<summary>round 1: " in section
    assert "<summary>tool read_file (step 2) · " in section
    assert "a note" in section
    assert "<p>gate says yes: passed (`says yes` passed)</p>" in section  # nothing under it
    assert "<pre>reason: it says yes</pre>" in section


def test_show_names_the_rounds_a_run_has(tmp_path: Path) -> None:
    root, run = _recorded(tmp_path)
    shown = harness("show", run, "--round", "5", cwd=root)
    assert shown.returncode == 2
    assert "--round 5: not in the trajectory (rounds: 1)" in shown.stderr


def test_a_recording_kept_in_the_tests_replays_in_another_clone(tmp_path: Path) -> None:
    root, run = _recorded(tmp_path)
    kept = root / "tests" / "recorded" / run
    shutil.copytree(root / ".harness" / "runs" / run, kept)
    git(root, "add", "tests")
    git(root, "commit", "-qm", "keep a recorded run as a regression test")
    clone = tmp_path / "elsewhere"
    git(tmp_path, "clone", "-q", str(root), str(clone))
    replay = harness("replay", f"tests/recorded/{run}", "--repo", ".", cwd=clone)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "no divergence" in replay.stdout
    (clone / "loop.toml").write_text(LOOP.replace("grep -qx yes", "grep -qx no"))
    changed = harness("replay", f"tests/recorded/{run}", "--repo", ".", cwd=clone)
    assert changed.returncode == 3, changed.stdout + changed.stderr
    assert "first divergence at round 1: gate says yes differs" in changed.stdout


def test_show_and_replay_do_not_load_litellm(tmp_path: Path) -> None:
    root, run = _recorded(tmp_path)
    probe = (
        "import sys\n"
        "from harness.cli.main import main\n"
        f"assert main(['show', {run!r}]) == 0\n"
        f"assert main(['replay', {run!r}]) == 0\n"
        "print('litellm' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "False"
