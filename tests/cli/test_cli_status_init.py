"""``harness status`` from anywhere, and what ``harness init`` writes and advises."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.cli.test_cli import ROOT, harness
from tests.cli.test_examples import SCRATCH
from tests.conftest import git, make_repo


def test_status_at_the_repository_root_lists_the_examples_loops(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "examples", ignore=SCRATCH)
    shutil.copyfile(ROOT / "README.md", tmp_path / "README.md")
    shutil.copytree(ROOT / "progress", tmp_path / "progress")  # its sample is not a loop
    examples = tmp_path / "examples"
    for where in (tmp_path, examples):
        result = harness("status", str(where), cwd=tmp_path)
        assert result.returncode == 0, result.stdout
        assert result.stdout.splitlines() == [
            f"{name}: not started ({examples / name / 'loop.toml'})"
            for name in sorted(p.parent.name for p in examples.glob("*/loop.toml"))
        ]
        assert "README" not in result.stdout


PROGRESS = """\
# Progress: bugfix

Goal: fix it
Status: in progress
Round: 2 of 10

## Checklist

- [x] reproduce
- [ ] fix the rounding

## Attempts

### Round 1 — failed: 1/2 gates passed

- Gate: pytest — passed
- Gate: ruff — failed (E501)
- Critic: 6/10

### Round 2 — failed: 0/2 gates passed

- Gate: pytest — failed (tests/test_total.py::test_rounding)
- Gate: ruff — failed (E501)
- Critic: 3.5/10
"""


def test_status_imports_neither_pydantic_nor_the_event_models_nor_the_engine(
    tmp_path: Path,
) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "examples", ignore=SCRATCH)
    progress = tmp_path / "examples" / "bugfix" / ".harness" / "progress" / "bugfix.md"
    progress.parent.mkdir(parents=True)
    progress.write_text(PROGRESS)
    code = (
        "import sys\n"
        "from harness.cli.main import main\n"
        "code = main(['status', 'examples'])\n"
        "print(sorted(m for m in sys.modules if m.startswith(('harness.', 'pydantic'))))\n"
        "sys.exit(code)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == (
        "bugfix: in progress, round 2 of 10, 1 open item(s), last: failed: 0/2 gates passed, "
        "best: round 1 (1/2 gates passed, critic 6.0/10)"
    )
    assert "content: not started" in result.stdout
    loaded = result.stdout.splitlines()[-1]
    assert "'harness.spec.outline'" in loaded  # the loops were read, for what status shows
    assert "'harness.memory.progress_format'" in loaded  # and the progress file
    never = ("core.event_schema", "observe.run_summary", "engine.loop", "sandbox.sandbox")
    models = ("memory.progress", "memory.progress_items", "memory.approval", "spec.loop_spec")
    for unused in (*never, *models, "spec.sections"):
        assert f"'harness.{unused}'" not in loaded
    assert "'pydantic'" not in loaded
    # what it shows is what the validated file says
    from harness.memory.progress import Progress

    shown = Progress.load(progress)
    assert (shown.iteration, len(shown.open_items), shown.attempts[-1].outcome) == (
        2, 1, "failed: 0/2 gates passed",
    )  # fmt: skip


def test_status_reports_a_broken_loop_toml_beside_the_good_ones(tmp_path: Path) -> None:
    (tmp_path / "good").mkdir()
    (tmp_path / "good/loop.toml").write_text(
        'name = "good"\ngoal = "x"\n[[gates]]\ntype = "command"\ncmd = "true"\n'
    )
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad/loop.toml").write_text('goal = "x"\nname = "two words"\n')
    (tmp_path / "odd").mkdir()  # status reads name and progress; `harness run` reads the rest
    (tmp_path / "odd/loop.toml").write_text('name = "odd"\ngoal = "x"\nbogus = 1\n')
    result = harness("status", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout.splitlines() == [
        "bad/loop.toml: cannot be read: bad/loop.toml: field 'name': should be a string "
        "matching '^[A-Za-z0-9][A-Za-z0-9_.-]*$', not 'two words'",
        "good: not started (good/loop.toml)",
        "odd: not started (odd/loop.toml)",
    ]


def test_status_of_a_missing_path_exits_2_naming_it(tmp_path: Path) -> None:
    result = harness("status", str(tmp_path / "no/such/path"), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == f"harness: {tmp_path / 'no/such/path'}: no such file or folder\n"


def test_status_of_a_folder_without_loops_says_so(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# A project\n\nKeep an LLM agent working.\n")
    result = harness("status", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout == "no loops found under .\n"


def test_init_writes_auto_isolation_and_asks_for_a_commit_in_git(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    result = harness("init", cwd=repo)
    assert result.returncode == 0, result.stderr
    config = tomllib.loads((repo / "loop.toml").read_text())
    assert config["isolation"] == "auto"
    assert "commit these files" in result.stdout
    assert (repo / ".gitignore").read_text().splitlines() == [".harness/", "progress/*.lock",
        "__pycache__/", "*.pyc", "*.pyo", ".pytest_cache/", ".ruff_cache/", ".mypy_cache/",
        ".aider.tags.cache.v4/"]  # fmt: skip
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "harness init")
    (repo / "progress" / "bugfix.md.lock").write_text("")
    for cache in ("tests/__pycache__/t.pyc", "a.pyo", ".pytest_cache/v", "x/.ruff_cache/c",
                  ".mypy_cache/m", "b.pyc"):  # fmt: skip
        (repo / cache).parent.mkdir(parents=True, exist_ok=True)
        (repo / cache).write_text("")
    assert git(repo, "status", "--porcelain") == ""  # the lock file and caches are ignored


def test_init_keeps_an_existing_gitignore_and_adds_only_what_it_lacks(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {".gitignore": "node_modules/\n__pycache__/\n.harness/\n"})
    result = harness("init", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert (repo / ".gitignore").read_text().splitlines() == [
        "node_modules/", "__pycache__/", ".harness/", "progress/*.lock",
        "*.pyc", "*.pyo", ".pytest_cache/", ".ruff_cache/", ".mypy_cache/", ".aider.tags.cache.v4/",
    ]  # fmt: skip


def test_init_outside_git_does_not_ask_for_a_commit(tmp_path: Path) -> None:
    result = harness("init", "content", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "commit" not in result.stdout
    assert tomllib.loads((tmp_path / "loop.toml").read_text())["isolation"] == "none"


def test_worktree_isolation_outside_git_gives_loop_toml_advice(tmp_path: Path) -> None:
    (tmp_path / "loop.toml").write_text(
        'goal = "x"\nmodel = "scripted:s.json"\nisolation = "worktree"\n'
        '[[gates]]\ntype = "command"\ncmd = "true"\n'
    )
    (tmp_path / "s.json").write_text('["done"]')
    result = harness("run", cwd=tmp_path)
    assert result.returncode == 2
    assert 'set isolation = "none" in loop.toml' in result.stderr
    assert "pass isolation='none'" not in result.stderr


def test_init_says_it_kept_a_skill_already_there_and_wrote_the_rest(tmp_path: Path) -> None:
    skill = tmp_path / "skills" / "bugfix" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("# my own rules\n")
    result = harness("init", "bugfix", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    first = result.stdout.splitlines()[0]
    assert first == f"wrote loop.toml and progress/; kept your {Path('skills/bugfix/SKILL.md')}"
    assert skill.read_text() == "# my own rules\n"
    fresh = harness("init", "content", "--dir", "other", cwd=tmp_path)
    assert fresh.stdout.splitlines()[0] == (
        "wrote other/loop.toml, other/skills/content/SKILL.md and other/progress/"
    )


@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_is_taken_before_or_after_the_command(tmp_path: Path, where: str) -> None:
    (tmp_path / "loop.toml").write_text('goal = "g"\n[critic]\nenabled = false\n')
    argv = ["--debug", "run"] if where == "before" else ["run", "--debug"]
    result = harness(*argv, cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback (most recent call last)" in result.stderr
    plain = harness("run", cwd=tmp_path)
    assert plain.returncode == 2
    assert "Traceback" not in plain.stderr
    assert "field 'gates'" in plain.stderr


def test_run_in_a_folder_without_a_loop_says_how_to_make_one(tmp_path: Path) -> None:
    here = harness("run", cwd=tmp_path)
    assert here.returncode == 2
    assert here.stderr == (
        "harness: loop.toml: no such file; `harness init KIND` writes one, KIND being bugfix, "
        "content or research\n"
    )
    (tmp_path / "sub").mkdir()
    there = harness("run", "sub", cwd=tmp_path)
    assert there.stderr == (
        f"harness: {Path('sub/loop.toml')}: no such file; `harness init KIND --dir sub` writes "
        "one, KIND being bugfix, content or research\n"
    )
    named = harness("run", "sub/other.toml", cwd=tmp_path)  # a file named: no folder to init
    assert named.stderr == (
        f"harness: {Path('sub/other.toml')}: no such file (expected a loop.toml or a folder "
        "holding one)\n"
    )


def test_a_missing_skill_file_is_named_once_with_its_field(tmp_path: Path) -> None:
    (tmp_path / "script.json").write_text('["done"]')
    (tmp_path / "loop.toml").write_text(
        'goal = "g"\nmodel = "scripted:script.json"\nskill = "skills/fix/SKILL.md"\n'
        'isolation = "none"\n[critic]\nenabled = false\n'
        '[[gates]]\ntype = "command"\ncmd = "true"\n'
    )
    result = harness("run", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == (
        f"harness: loop.toml: field 'skill': {tmp_path / 'skills/fix/SKILL.md'}: cannot read "
        "skill file: No such file or directory\n"
    )
