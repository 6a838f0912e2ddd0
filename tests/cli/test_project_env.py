"""``harness run`` on a project whose code needs a package only its own environment holds.

The project imports ``toolz``; the harness's environment lacks it. Its ``.venv`` (a real
``python -m venv``, a tiny local ``toolz`` in its site-packages) is found and used; so is an
interpreter named by ``[env] python``; a ``[env] setup`` command makes one, once per base
commit; without any, the run stops before round 1 with exit 2 and one line saying why. Each
under both backends the tests use.
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import pytest

from tests.cli.test_cli import harness
from tests.cli.test_examples import of_kind, read_events
from tests.conftest import git, make_repo
from tests.verify.test_pytest_runtime import make_venv

BACKENDS = ["bwrap", "none"]

BUGGY = {
    "calc/__init__.py": "from toolz import double\n\n\ndef quadruple(x):\n    return double(x) + 2\n",
    "tests/test_calc.py": "from calc import quadruple\n\n\ndef test_quadruple():\n"
    "    assert quadruple(3) == 12\n",
}
FIX = {"path": "calc/__init__.py", "old": "double(x) + 2", "new": "double(x) * 2"}
BLOCKED = (
    "cannot collect at the base commit: ModuleNotFoundError: toolz — "
    "is the project's environment set up? see [env]"
)
TOOLZ = "def double(x):\n    return 2 * x\n"
SETUP = (
    'echo ran >> "$UV_CACHE_DIR/../setup-runs" && '
    'site="$(python -c "import sysconfig; print(sysconfig.get_path(\'purelib\'))")" && '
    'cp -r vendor/toolz "$site/"'
)


UNSANDBOXED = (
    "commands are not sandboxed: they run as the harness's user, with its files in reach "
    "(backend 'none')"
)


def envs() -> Path:
    """Where made environments are kept: the test's own state folder (see conftest)."""
    return Path(os.environ["XDG_STATE_HOME"]) / "harness" / "envs"


def loop_toml(backend: str, env: str = "") -> str:
    return (
        'name = "fix"\ngoal = "Make the tests pass."\nmax_iterations = 3\n'
        '[[gates]]\ntype = "pytest"\nargs = "-q tests"\n'
        "[critic]\nenabled = false\n"
        f'[sandbox]\nbackend = "{backend}"\n{env}'
    )


def project(
    tmp_path: Path, backend: str, env: str = "", extra: dict[str, str] | None = None
) -> Path:
    files = {**BUGGY, "loop.toml": loop_toml(backend, env), ".gitignore": ".venv/\n.harness/\n"}
    return make_repo(tmp_path / "project", {**files, **(extra or {})})


def script(tmp_path: Path) -> str:
    round_1 = [{"name": "edit_file", "arguments": FIX},
               {"name": "submit", "arguments": {"summary": "fixed"}}]  # fmt: skip
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"rounds": {"1": round_1}}))
    return f"scripted:{path}"


def run(repo: Path, model: str, *more: str) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    result = harness("run", "--quiet", "--model", model, *more, cwd=repo, env=env)
    return result.returncode, result.stdout, result.stderr


def assert_blocked(code: int, out: str, err: str, backend: str) -> None:
    """Exit 2 with the one line (and, unsandboxed, the notice); the unused branch removed."""
    notice = [] if backend == "bwrap" else [f"note: {UNSANDBOXED}"]
    assert (code, out.splitlines()) == (2, [f"ERROR: {BLOCKED}", *notice])
    assert err.startswith("note: no round did any work, so nothing is kept: removed its branch ")


@pytest.mark.parametrize("backend", BACKENDS)
def test_without_an_environment_the_run_stops_before_round_one_with_exit_2(
    tmp_path: Path, backend: str
) -> None:
    repo = project(tmp_path, backend)

    code, out, err = run(repo, script(tmp_path))

    assert_blocked(code, out, err, backend)
    events = read_events(repo)
    assert of_kind(events, "round_start") == []
    assert of_kind(events, "stop")[0]["message"] == BLOCKED


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_detected_venv_is_used_and_the_fix_passes_in_round_one(
    tmp_path: Path, backend: str
) -> None:
    repo = project(tmp_path, backend)
    make_venv(repo / ".venv")

    code, out, err = run(repo, script(tmp_path))

    assert code == 0, out + err
    assert "PASSED: round 1" in out
    events = read_events(repo)
    assert [g["summary"] for g in of_kind(events, "gate_report")] == ["pytest: 1 passed of 1 tests"]
    notes = of_kind(events, "run_start")[0]["notes"]
    assert f"commands run in the project's Python environment (.venv at {repo}): " in notes[-1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_env_python_names_an_interpreter_outside_the_project(tmp_path: Path, backend: str) -> None:
    env = make_venv(tmp_path / "elsewhere" / "env")
    repo = project(tmp_path, backend, f'[env]\npython = "{env.python}"\n')

    code, out, err = run(repo, script(tmp_path))

    assert code == 0, out + err
    notes = of_kind(read_events(repo), "run_start")[0]["notes"]
    assert notes[-1].endswith(f"([env] python): {env.python}")


def test_a_detected_venv_is_not_used_when_detection_is_off(tmp_path: Path) -> None:
    repo = project(tmp_path, "none", "[env]\ndetect = false\n")
    make_venv(repo / ".venv")

    code, out, err = run(repo, script(tmp_path))

    assert_blocked(code, out, err, "none")


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_env_setup_runs_once_per_base_commit_and_is_kept_across_runs(
    tmp_path: Path, backend: str
) -> None:
    repo = project(tmp_path, backend, f"[env]\nsetup = '''{SETUP}'''\n",
                   {"vendor/toolz/__init__.py": TOOLZ})  # fmt: skip
    runs = envs() / "cache" / "setup-runs"
    model = script(tmp_path)

    code, out, err = run(repo, model)
    assert code == 0, out + err
    assert runs.read_text() == "ran\n"
    code, out, err = run(repo, model, "--restart")
    assert code == 0, out + err
    assert runs.read_text() == "ran\n"  # the same base commit: the environment is kept

    (repo / "NOTES.md").write_text("a new commit\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "notes")
    code, out, err = run(repo, model, "--restart")
    assert code == 0, out + err
    assert runs.read_text() == "ran\nran\n"
    assert len(list(envs().glob("project-*/*/ready"))) == 2


def test_a_failing_setup_is_bad_configuration_naming_the_field(tmp_path: Path) -> None:
    repo = project(tmp_path, "none", "[env]\nsetup = 'echo no network here; exit 4'\n")

    code, out, err = run(repo, script(tmp_path))

    assert code == 2, out + err
    assert "field 'env.setup': `echo no network here; exit 4` failed with exit code 4" in err
    assert "no network here" in err
    assert list(envs().glob("*/*/venv")) == []


def test_a_module_missing_in_a_round_is_named_in_the_gate_report(tmp_path: Path) -> None:
    files = {
        "calc/__init__.py": "def quadruple(x):\n    return x * 4\n",
        "tests/test_calc.py": BUGGY["tests/test_calc.py"],
    }
    repo = project(tmp_path, "none", extra=files)
    edit = {
        "path": "calc/__init__.py",
        "old": "def quadruple",
        "new": "import toolz\n\n\ndef quadruple",
    }
    round_1 = [{"name": "edit_file", "arguments": edit},
               {"name": "submit", "arguments": {"summary": "uses toolz"}}]  # fmt: skip
    (tmp_path / "script.json").write_text(json.dumps({"rounds": {"1": round_1}}))

    code, out, err = run(repo, f"scripted:{tmp_path / 'script.json'}", "--max-iterations", "1")

    assert code == 3, out + err
    summaries = [g["summary"] for g in of_kind(read_events(repo), "gate_report")]
    assert summaries == [
        "pytest: 1 error of 1 tests; could not collect tests/test_calc.py "
        "(ModuleNotFoundError: No module named 'toolz')"
    ]


SRC_LAYOUT = {
    "src/calc/__init__.py": BUGGY["calc/__init__.py"],
    "tests/test_calc.py": BUGGY["tests/test_calc.py"],
}
EDITABLE = (  # what an editable install of a src layout leaves: a .pth naming the source folder
    'site="$(python -c "import sysconfig; print(sysconfig.get_path(\'purelib\'))")" && '
    'cp -r vendor/toolz "$site/" && echo "$PWD/src" > "$site/_calc.pth"'
)


@pytest.mark.parametrize("made", ["detected", "setup"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_an_editable_src_layout_is_judged_from_the_round_not_the_checkout_it_was_installed_from(
    tmp_path: Path, backend: str, made: str
) -> None:
    env = f"[env]\nsetup = '''{EDITABLE}'''\n" if made == "setup" else ""
    files = {**SRC_LAYOUT, "vendor/toolz/__init__.py": TOOLZ}
    repo = make_repo(tmp_path / "project", {**files, "loop.toml": loop_toml(backend, env),
                                            ".gitignore": ".venv/\n.harness/\n"})  # fmt: skip
    if made == "detected":
        venv = make_venv(repo / ".venv")
        site = next((venv.prefix / "lib").glob("python3*/site-packages"))
        (site / "_calc.pth").write_text(f"{repo / 'src'}\n")  # as `pip install -e .` in the repo
    fix = {**FIX, "path": "src/calc/__init__.py"}
    round_1 = [{"name": "edit_file", "arguments": fix},
               {"name": "submit", "arguments": {"summary": "fixed"}}]  # fmt: skip
    (tmp_path / "script.json").write_text(json.dumps({"rounds": {"1": round_1}}))

    code, out, err = run(repo, f"scripted:{tmp_path / 'script.json'}", "--max-iterations", "1")

    assert code == 0, out + err
    summaries = [g["summary"] for g in of_kind(read_events(repo), "gate_report")]
    assert summaries == ["pytest: 1 passed of 1 tests"]
    assert "double(x) + 2" in (repo / "src/calc/__init__.py").read_text()  # the user's, untouched


def write_wheel(folder: Path) -> str:
    """A real wheel of the tiny ``toolz``, made by hand: pip installs it with no build backend."""
    name = "toolz-0.1-py3-none-any.whl"
    files = {
        "toolz/__init__.py": TOOLZ,
        "toolz-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: toolz\nVersion: 0.1\n",
        "toolz-0.1.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = "".join(f"{path},,\n" for path in files) + "toolz-0.1.dist-info/RECORD,,\n"
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(folder / name, "w") as wheel:
        for path, text in {**files, "toolz-0.1.dist-info/RECORD": record}.items():
            wheel.writestr(path, text)
    return f"{folder.name}/{name}"


@pytest.mark.slow
def test_a_pip_setup_gets_pip_in_the_made_environment(tmp_path: Path) -> None:
    repo = project(tmp_path, "none")
    wheel = write_wheel(repo / "wheels")
    loop = repo / "loop.toml"
    loop.write_text(loop.read_text() + f"[env]\nsetup = 'pip install --no-index {wheel}'\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a setup with pip")

    code, out, err = run(repo, script(tmp_path))

    assert code == 0, out + err
    made = [ready.parent for ready in envs().glob("*/*/ready")]
    assert len(made) == 1
    assert list((made[0] / "venv" / "bin").glob("pip")) != []
    assert list((made[0] / "venv").glob("lib/python3*/site-packages/toolz-0.1.dist-info"))


def draft_loop(backend: str, check: str) -> dict[str, str]:
    toml = (
        'name = "draft"\ngoal = "Write draft.md."\nmax_iterations = 1\n'
        f'[[gates]]\ntype = "command"\nname = "long enough"\ncmd = "{check} words --min 3 draft.md"\n'
        f'[critic]\nenabled = false\n[sandbox]\nbackend = "{backend}"\n'
    )
    return {"loop.toml": toml, ".gitignore": ".venv/\n.harness/\n", "brief.md": "a brief\n"}


def draft_script(tmp_path: Path) -> str:
    write = {"path": "draft.md", "content": "# Title\n\none two three\n"}
    steps = [{"name": "write_file", "arguments": write},
             {"name": "submit", "arguments": {"summary": "drafted"}}]  # fmt: skip
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"rounds": {"1": steps}}))
    return f"scripted:{path}"


@pytest.mark.parametrize("backend", BACKENDS)
def test_harness_check_works_in_a_gate_whose_project_venv_lacks_the_harness(
    tmp_path: Path, backend: str
) -> None:
    """The project's .venv comes first on PATH and has no harness: `python -m harness.checks...`
    cannot import it there, `harness check` (the harness's own command, next on PATH) can."""
    repo = make_repo(tmp_path / "project", draft_loop(backend, "harness check content"))
    make_venv(repo / ".venv")

    code, out, err = run(repo, draft_script(tmp_path))

    assert code == 0, out + err
    reports = of_kind(read_events(repo), "gate_report")
    assert [(r["name"], r["passed"]) for r in reports] == [("long enough", True)]

    module = make_repo(tmp_path / "module", draft_loop(backend, "python -m harness.checks.content"))
    make_venv(module / ".venv")
    code, out, err = run(module, draft_script(tmp_path))
    assert code == 3, out + err
    [report] = of_kind(read_events(module), "gate_report")
    assert report["passed"] is False
    assert (
        "Error while finding module specification for 'harness.checks.content'"
        in (report["summary"])
    )
