"""The reproduction gate: the round's tests fail at the base commit and pass on the round's."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from harness import Agent, OuterLoop, ScriptedModel, ToolCall
from harness.core.errors import ConfigError
from harness.core.state_home import state_home
from harness.memory.progress import Progress
from harness.outer.claims import unconfirmed_pass
from harness.spec import LoopSpec
from harness.verify.base_results import FOLDER
from harness.verify.gates import RoundChange, run_gates
from harness.verify.pytest_gate import PytestGate
from harness.verify.reproduction import ReproductionGate
from harness.verify.round import PYTEST_CONFIG_FILES, default_protect
from harness.verify.written_tests import files_tests_read, written_by_round
from harness.workspace.checkout import clean_checkout, file_at
from tests.conftest import git, make_repo
from tests.outer.test_outer_guarantees import session_tasks

BROKEN = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
OLD_TESTS = "from calc import add\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n"
REPRODUCES = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
PASSES_AT_BASE = "from calc import add\n\n\ndef test_add_zero():\n    assert add(2, 0) == 2\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(
        tmp_path / "repo",
        {"calc.py": BROKEN, "tests/test_old.py": OLD_TESTS, "tests/__init__.py": ""},
    )


class Bases:
    """Clean checkouts of the base, counted."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.base = git(repo, "rev-parse", "HEAD")
        self.made = 0

    @contextmanager
    def checkout(self) -> Iterator[Path]:
        self.made += 1
        with clean_checkout(self.repo, self.repo, base=self.base, protect=(), at_base=True) as c:
            yield c


def delivered(repo: Path, tmp_path: Path, files: dict[str, str]) -> tuple[Path, RoundChange, Bases]:
    """The round's checkout (the base's files with ``files`` written) and its change."""
    folder = tmp_path / "round"
    shutil.copytree(repo, folder, ignore=shutil.ignore_patterns(".git"))
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    bases = Bases(repo)
    change = RoundChange(
        base=bases.base,
        folder="",
        changed=tuple(files),
        read_base=lambda path: file_at(repo, bases.base, path),
        checkout_base=bases.checkout,
    )
    return folder, change, bases


def test_a_test_that_fails_at_the_base_and_passes_now_reproduces_and_is_kept(
    repo: Path, tmp_path: Path
) -> None:
    files = {"calc.py": FIXED, "tests/test_add.py": REPRODUCES}
    folder, change, bases = delivered(repo, tmp_path, files)
    gate = ReproductionGate()

    report = gate.check_change(folder, change)

    assert report.passed, report
    assert report.summary == (
        "reproduction: 1 test fail at the base commit and pass now: tests/test_add.py::test_add"
    )
    assert (
        report.output_tail == "tests/test_add.py::test_add: failed at the base commit, passed now"
    )
    assert bases.made == 1
    assert len(list((state_home() / FOLDER).glob("*.json"))) == 1
    again = gate.check_change(folder, change)
    assert again == report
    assert bases.made == 1, "the base's results are kept per base and tests, not measured again"
    (folder / "tests" / "test_add.py").write_text(REPRODUCES + "\n")  # other tests: measured
    assert gate.check_change(folder, change).passed
    assert bases.made == 2


def test_a_test_that_passes_at_the_base_does_not_reproduce(repo: Path, tmp_path: Path) -> None:
    files = {"calc.py": FIXED, "tests/test_add.py": PASSES_AT_BASE}
    folder, change, _ = delivered(repo, tmp_path, files)

    report = ReproductionGate().check_change(folder, change)

    assert not report.passed
    assert report.summary == (
        "reproduction: does not reproduce: tests/test_add.py::test_add_zero passes at the base commit"
    )
    assert report.failures == ["tests/test_add.py::test_add_zero"]
    assert "fails at the base commit (the code before" in report.output_tail


def test_every_test_the_round_wrote_must_reproduce(repo: Path, tmp_path: Path) -> None:
    both = REPRODUCES + "\n\ndef test_add_zero():\n    assert add(2, 0) == 2\n"
    folder, change, _ = delivered(repo, tmp_path, {"calc.py": FIXED, "tests/test_add.py": both})

    report = ReproductionGate().check_change(folder, change)

    assert not report.passed
    assert report.failures == ["tests/test_add.py::test_add_zero"]
    assert report.output_tail.splitlines()[:2] == [
        "tests/test_add.py::test_add: failed at the base commit, passed now",
        "tests/test_add.py::test_add_zero: passed at the base commit, passed now",
    ]


def test_a_fix_without_a_test_fails(repo: Path, tmp_path: Path) -> None:
    folder, change, bases = delivered(repo, tmp_path, {"calc.py": FIXED})

    report = ReproductionGate().check_change(folder, change)

    assert not report.passed
    assert report.summary == "no reproduction test: the round adds no test"
    assert bases.made == 0


def test_a_reproduction_test_that_fails_now_fails_the_round(repo: Path, tmp_path: Path) -> None:
    folder, change, _ = delivered(repo, tmp_path, {"tests/test_add.py": REPRODUCES})

    report = ReproductionGate().check_change(folder, change)

    assert not report.passed
    assert report.summary == (
        "reproduction: tests/test_add.py::test_add fails on the round's commit"
    )
    assert "assert -1 == 5" in report.output_tail


def test_only_the_tests_the_round_changed_are_judged(repo: Path, tmp_path: Path) -> None:
    changed = OLD_TESTS + "\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    folder, change, _ = delivered(repo, tmp_path, {"calc.py": FIXED, "tests/test_old.py": changed})

    report = ReproductionGate().check_change(folder, change)

    assert report.passed, report
    assert (
        report.output_tail == "tests/test_old.py::test_add: failed at the base commit, passed now"
    )


def test_a_module_that_cannot_import_at_the_base_reproduces(repo: Path, tmp_path: Path) -> None:
    test = "from calc import subtract\n\n\ndef test_subtract():\n    assert subtract(3, 2) == 1\n"
    source = FIXED + "\n\ndef subtract(a, b):\n    return a - b\n"
    folder, change, _ = delivered(repo, tmp_path, {"calc.py": source, "tests/test_sub.py": test})

    report = ReproductionGate().check_change(folder, change)

    assert report.passed, report
    assert report.output_tail == (
        "tests/test_sub.py::test_subtract: error at the base commit, passed now"
    )


def test_named_tests_are_the_ones_judged(repo: Path, tmp_path: Path) -> None:
    files = {"calc.py": FIXED, "tests/test_add.py": REPRODUCES + "\n\ndef test_more():\n    pass\n"}
    folder, change, _ = delivered(repo, tmp_path, files)

    named = ReproductionGate(["tests/test_add.py::test_add"]).check_change(folder, change)
    missing = ReproductionGate(["tests/test_add.py::test_gone"]).check_change(folder, change)

    assert named.passed, named
    assert named.output_tail == "tests/test_add.py::test_add: failed at the base commit, passed now"
    assert not missing.passed
    assert missing.summary == "reproduction: no test ran for tests/test_add.py::test_gone"


def test_without_the_round_s_change_it_cannot_judge(tmp_path: Path) -> None:
    report = run_gates([ReproductionGate()], tmp_path)[0]
    assert not report.passed
    assert report.summary.startswith("reproduction: no base commit to run the tests at")


def test_with_a_reproduction_gate_tests_are_writable_and_pytest_settings_are_not() -> None:
    assert default_protect([PytestGate("tests"), ReproductionGate()]) == PYTEST_CONFIG_FILES
    assert "tests" in default_protect([PytestGate("tests")])


def test_the_round_s_test_files_and_tests() -> None:
    changed = ["calc.py", "tests/helpers.py", "tests/test_a.py", "b_test.py", "tests.py", "doc.md"]
    assert files_tests_read(changed) == [
        "tests/helpers.py",
        "tests/test_a.py",
        "b_test.py",
        "tests.py",
    ]
    before = (
        "class T:\n    def test_a(self):\n        pass\n\n    def test_b(self):\n        pass\n"
    )
    after = before.replace("def test_b(self):\n        pass", "def test_b(self):\n        1 / 0")
    ids = ["t.py::T::test_a", "t.py::T::test_b[1]", "new.py::test_c"]
    texts = {"t.py": (before, after), "new.py": (None, "def test_c(): pass\n")}
    found = written_by_round(ids, lambda p: texts[p][0], lambda p: texts[p][1])
    assert found == ["t.py::T::test_b[1]", "new.py::test_c"]


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("tests", ["../outside.py::test_x"], "gates[0].tests[0]"),
        ("tests", ["-k"], "gates[0].tests[0]"),
        ("timeout", 0, "gates[0].timeout"),
    ],
)
def test_bad_settings_name_the_field(tmp_path: Path, field: str, value: object, said: str) -> None:
    toml = f'goal = "fix"\n[[gates]]\ntype = "reproduction"\n{field} = {value!r}\n'.replace(
        "'", '"'
    )
    (tmp_path / "loop.toml").write_text(toml)
    with pytest.raises(ConfigError) as raised:
        LoopSpec.from_toml(tmp_path / "loop.toml")
    assert said in str(raised.value)
    with pytest.raises(ConfigError, match=field):
        ReproductionGate(**{field: value})  # type: ignore[arg-type]


def test_through_the_loop_a_fix_with_its_test_passes_and_its_claim_is_confirmed(
    repo: Path, tmp_path: Path
) -> None:
    def write(path: str, content: str) -> ToolCall:
        return ToolCall("write_file", {"path": path, "content": content})

    model = ScriptedModel(
        [
            [write("calc.py", FIXED), write("tests/test_add.py", PASSES_AT_BASE)],
            "fixed",
            [write("tests/test_add.py", REPRODUCES)],
            "the test shows the bug",
        ]
    )
    progress = tmp_path / "progress.md"
    loop = OuterLoop(
        "fix add", Agent(model), gates=[ReproductionGate()], workspace=repo,
        progress=progress, max_iterations=2,
    )  # fmt: skip

    result = loop.run()

    assert [r.outcome for r in result.rounds] == ["failed: reproduction", "passed"]
    assert "tests/test_add.py::test_add_zero passes at the base commit" in session_tasks(model)[1]
    assert unconfirmed_pass(loop.settings, Progress.load(progress)) is None
