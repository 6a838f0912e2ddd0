"""The test gates' results at a base commit: measured once per base, kept where no agent writes."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import Agent, OuterLoop, PytestGate, Sandbox, ScriptedModel, StopReason, ToolCall
from harness.core.state_home import state_home
from harness.sandbox.python_env import PythonEnv
from harness.verify.base_results import FOLDER, entry_key, entry_path, measure_at_base
from harness.verify.gates import CommandGate
from tests.conftest import git, make_repo

TESTS = "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"
FILES = {"calc.py": "def add(a, b):\n    return a - b\n", "tests/test_calc.py": TESTS}


class Checkouts:
    """A checkout of the base for :func:`measure_at_base`, counting how often it is entered."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.entered = 0

    @contextlib.contextmanager
    def __call__(self) -> Iterator[Path]:
        self.entered += 1
        yield self.folder


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    (folder / "tests").mkdir(parents=True)
    for name, text in FILES.items():
        (folder / name).write_text(text)
    return folder


def test_the_base_is_measured_once_and_then_read_back(project: Path) -> None:
    gate = PytestGate("tests")
    checkouts = Checkouts(project)
    first = measure_at_base([gate], base="a" * 40, folder="", checkout=checkouts)
    again = measure_at_base([PytestGate("tests")], base="a" * 40, folder="", checkout=checkouts)
    assert checkouts.entered == 1
    assert first == again
    assert first["pytest"].outcomes == {"tests/test_calc.py::test_add": "failed"}
    key = entry_key(gate, base="a" * 40, folder="")
    assert key is not None
    assert entry_path(key).parent == state_home() / FOLDER


@pytest.mark.parametrize(
    ("gate", "base", "folder"),
    [
        (PytestGate("tests"), "b" * 40, ""),  # another base commit
        (PytestGate("tests -k add"), "a" * 40, ""),  # other arguments
        (PytestGate("tests", timeout=30), "a" * 40, ""),  # another timeout
        (PytestGate("tests", name="unit"), "a" * 40, ""),  # another gate
        (PytestGate("tests"), "a" * 40, "app/"),  # another folder of the repository
    ],
)
def test_anything_else_that_decides_the_results_measures_again(
    project: Path, gate: PytestGate, base: str, folder: str
) -> None:
    checkouts = Checkouts(project)
    measure_at_base([PytestGate("tests")], base="a" * 40, folder="", checkout=checkouts)
    measure_at_base([gate], base=base, folder=folder, checkout=checkouts)
    assert checkouts.entered == 2


def test_gates_without_a_key_are_measured_every_time(project: Path) -> None:
    class OwnSuite(PytestGate):
        """A gate of the user's: what its results depend on is not known here."""

    checkouts = Checkouts(project)
    for _ in range(2):
        found = measure_at_base(
            [OwnSuite("tests"), CommandGate("true")], base="a" * 40, folder="", checkout=checkouts
        )
        assert list(found) == ["pytest"]
    assert checkouts.entered == 2
    assert entry_key(CommandGate("true"), base="a" * 40, folder="") is None


def planted(path: Path, kind: str, key: str, outside: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "corrupt":
        path.write_text("{not json")
    elif kind == "other key":  # a valid entry, made for another key: an all-skipped base
        report = {"tests": 1, "failed": 0, "errors": 0, "skipped": 1, "problems": [],
                  "outcomes": {"tests/test_calc.py::test_add": "skipped"}}  # fmt: skip
        path.write_text(json.dumps({"key": "0" * 64, "report": report}))
    elif kind == "wrong shape":
        path.write_text(json.dumps({"key": key, "report": {"tests": "many"}}))
    elif kind == "link":
        outside.write_text(json.dumps({"key": key, "report": {}}))
        path.symlink_to(outside)
    elif kind == "folder":
        path.mkdir()


@pytest.mark.parametrize("kind", ["corrupt", "other key", "wrong shape", "link", "folder"])
def test_an_entry_not_to_be_believed_is_measured_again(
    project: Path, tmp_path: Path, kind: str
) -> None:
    gate = PytestGate("tests")
    key = entry_key(gate, base="a" * 40, folder="")
    assert key is not None
    outside = tmp_path / "outside.json"
    planted(entry_path(key), kind, key, outside)
    checkouts = Checkouts(project)
    found = measure_at_base([gate], base="a" * 40, folder="", checkout=checkouts)
    assert checkouts.entered == 1
    assert found["pytest"].outcomes == {"tests/test_calc.py::test_add": "failed"}
    if kind == "link":
        assert entry_path(key).is_symlink()  # not written through
        assert json.loads(outside.read_text()) == {"key": key, "report": {}}
    elif kind != "folder":  # rewritten with what was measured: the next run reads it
        measure_at_base([gate], base="a" * 40, folder="", checkout=checkouts)
        assert checkouts.entered == 1


@pytest.mark.parametrize("kind", ["link", "folder"])
def test_a_lock_that_cannot_be_taken_is_gone_without(
    project: Path, tmp_path: Path, kind: str
) -> None:
    gate = PytestGate("tests")
    key = entry_key(gate, base="a" * 40, folder="")
    assert key is not None
    lock = entry_path(key).with_suffix(".lock")
    lock.parent.mkdir(parents=True)
    outside = tmp_path / "outside"
    if kind == "link":
        lock.symlink_to(outside)
    else:
        lock.mkdir()
    checkouts = Checkouts(project)

    found = measure_at_base([gate], base="a" * 40, folder="", checkout=checkouts)

    assert checkouts.entered == 1
    assert found["pytest"].outcomes == {"tests/test_calc.py::test_add": "failed"}
    assert not outside.exists()  # the link was not followed to make the file
    assert lock.is_symlink() if kind == "link" else lock.is_dir()
    measure_at_base([gate], base="a" * 40, folder="", checkout=checkouts)
    assert checkouts.entered == 1  # kept all the same


@pytest.mark.slow
def test_the_suite_runs_once_a_round_and_once_per_base_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    runs: list[str] = []
    real_run = PytestGate.run

    def counted(self: PytestGate, workspace: str | Path, args: list[str] | None = None) -> object:
        runs.append(str(workspace))
        return real_run(self, workspace, args)

    monkeypatch.setattr(PytestGate, "run", counted)

    def loop() -> OuterLoop:
        wrong = ToolCall("write_file", {"path": "calc.py", "content": "def add(a, b):\n    return a * b\n"})  # fmt: skip
        right = ToolCall("write_file", {"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"})  # fmt: skip
        model = ScriptedModel([wrong, "tried", right, "done"])
        return OuterLoop(
            "make the tests pass", Agent(model), gates=[PytestGate("tests")], workspace=repo
        )

    first = loop().run()
    assert first.stop_reason is StopReason.PASSED
    assert first.iterations == 2
    assert len(runs) == 3  # the base once, then each round
    assert len(set(runs)) == 1  # one checkout folder for the base and both rounds
    assert not Path(runs[0]).exists()  # removed when the run ended
    second = loop().run()  # a new run from the same base commit
    assert second.iterations == 2
    assert len(runs) == 5  # each round; the base's results were kept
    git(repo, "commit", "--allow-empty", "-qm", "a new base")
    loop().run()
    assert len(runs) == 8  # a new base commit is measured once more


def test_the_value_of_a_variable_the_sandbox_passes_on_is_part_of_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gate = PytestGate("tests", sandbox=Sandbox("none", env=["PROJECT_FLAG"]))
    keys = []
    for value in ("1", "2", "1"):
        monkeypatch.setenv("PROJECT_FLAG", value)
        keys.append(entry_key(gate, base="a" * 40, folder=""))
    assert keys[0] == keys[2]
    assert keys[0] != keys[1]
    assert all(key is not None and len(key) == 64 for key in keys)  # a digest, not the value


def test_a_variable_harness_sandbox_env_passes_on_keys_the_base_results_by_its_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HARNESS_SANDBOX_ENV", "PROJECT_FLAG")
    keys = []
    for value in ("1", "2"):
        monkeypatch.setenv("PROJECT_FLAG", value)
        keys.append(
            entry_key(PytestGate("tests", sandbox=Sandbox("none")), base="a" * 40, folder="")
        )
    monkeypatch.delenv("HARNESS_SANDBOX_ENV")
    unlisted = entry_key(PytestGate("tests", sandbox=Sandbox("none")), base="a" * 40, folder="")
    assert len({*keys, unlisted}) == 3  # each value its own entry, and not passing it another


def test_a_package_installed_in_the_projects_environment_measures_the_base_anew(
    tmp_path: Path,
) -> None:
    """A base that could not collect for want of a dependency is not kept as such once the user
    installs it: what the environment holds is part of the key."""
    venv = tmp_path / "venv"
    site = venv / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (venv / "bin").mkdir()
    (venv / "bin" / "python").touch()
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    env = PythonEnv(venv / "bin" / "python", venv, ".venv at the project")
    gate = PytestGate("tests", sandbox=Sandbox("none", python_env=env))
    before = entry_key(gate, base="a" * 40, folder="")
    (site / "toolz").mkdir()
    (site / "toolz-1.0.0.dist-info").mkdir()
    after = entry_key(gate, base="a" * 40, folder="")
    assert before != after
    assert entry_key(gate, base="a" * 40, folder="") == after  # nothing else changed
    no_env = entry_key(PytestGate("tests", sandbox=Sandbox("none")), base="a" * 40, folder="")
    assert no_env not in (before, after)
