"""Protected surfaces and the order of verification: what a round may not touch, each surface
by name, and what runs (or does not) once something failed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness import Critic, ScriptedModel, ToolCall
from harness.verify.gates import GateReport, PredicateGate
from harness.verify.pytest_gate import PytestGate
from harness.verify.reproduction import ReproductionGate
from harness.verify.round import default_protect, protected_changes, verify
from tests.conftest import RecordingSink, verdict_call

SURFACES = (
    "conftest.py", "tests/conftest.py", "pytest.ini", ".pytest.ini", "pytest.toml",
    ".pytest.toml", "tox.ini", "setup.cfg", "sitecustomize.py", "lib/sitecustomize.py",
    "usercustomize.py", "lib/usercustomize.py", "site/extra.pth", "pytest.py", "pytest",
    "pytest/__init__.py", "_pytest", "_pytest/main.py",
)  # fmt: skip


@pytest.mark.parametrize("surface", SURFACES)
def test_each_pytest_surface_is_protected_when_a_gate_runs_pytest(surface: str) -> None:
    protect = default_protect([PytestGate("tests/unit")])
    assert protected_changes([surface, "src/calc.py", "tests/unitx.py"], protect) == (surface,)


def test_the_default_protection_is_exactly_the_test_paths_and_pytests_surfaces() -> None:
    assert default_protect([PytestGate("tests/unit")]) == (
        "tests/unit", "conftest.py", "**/conftest.py", "pytest.ini", ".pytest.ini",
        "pytest.toml", ".pytest.toml", "tox.ini", "setup.cfg", "**/pyproject.toml:tool.pytest",
        "sitecustomize.py", "**/sitecustomize.py", "usercustomize.py", "**/usercustomize.py",
        "**/*.pth", "pytest.py", "pytest", "_pytest",
    )  # fmt: skip


def test_with_a_reproduction_gate_the_tests_may_be_written_and_only_pytest_s_surfaces_held() -> (
    None
):
    protect = default_protect([PytestGate("tests/unit"), ReproductionGate()])
    assert "tests/unit" not in protect
    assert protect == default_protect([ReproductionGate()])  # the suite's paths are not added
    changed = ["tests/unit/test_bug.py", "test_root.py", "conftest.py", "pytest.ini"]
    assert protected_changes(changed, protect) == ("conftest.py", "pytest.ini")


def test_the_root_protects_every_test_file_pytest_would_collect() -> None:
    protect = default_protect([PytestGate()])
    for path in ("tests/data/input.json", "test_a.py", "pkg/sub/test_b.py", "c_test.py",
                 "pkg/d_test.py"):  # fmt: skip
        assert protected_changes([path], protect) == (path,)
    assert protected_changes(["pkg/testing.py", "pkg/attest.py", "src/tests.py"], protect) == ()


def test_gates_that_run_no_tests_protect_nothing_and_shared_paths_are_listed_once() -> None:
    check = PredicateGate(lambda workspace: True, name="check")
    assert default_protect([check]) == ()
    assert default_protect([]) == ()
    twice = default_protect([PytestGate("tests"), PytestGate("tests ./tests/")])
    assert twice.count("tests") == 1
    assert twice.count("conftest.py") == 1
    assert default_protect([PytestGate("tests .")])[:6] == (
        "tests", "test_*.py", "**/test_*.py", "*_test.py", "**/*_test.py", "conftest.py",
    )  # fmt: skip


TABLE = ("pyproject.toml:tool.pytest",)


@pytest.mark.parametrize(
    ("before", "after", "found"),
    [
        ("[tool.pytest]\na = 1\n", "[tool.pytest]\na = 1\n", ()),
        ("[tool.pytest]\na = 1\n", "[tool.pytest]\na = 2\n", ("pyproject.toml [tool.pytest]",)),
        (None, "[tool.other]\na = 1\n", ()),
        (None, "[tool]\npytest = 3\n", ("pyproject.toml [tool.pytest]",)),
        ("tool = 1\n", "tool = 2\n", ()),
        ("[tool.pytest]\na = 1\n", None, ("pyproject.toml [tool.pytest]",)),
        ("[tool.pytest]\na = 1\n", "not toml [", ("pyproject.toml [tool.pytest]",)),
        ("bad [", "bad [", ()),
        ("bad [", "worse [", ("pyproject.toml [tool.pytest]",)),
    ],
)  # fmt: skip
def test_a_protected_table_counts_only_when_its_content_changed(
    before: str | None, after: str | None, found: tuple[str, ...]
) -> None:
    changes = protected_changes(
        ["pyproject.toml"], TABLE, before={"pyproject.toml": before}.get,
        after={"pyproject.toml": after}.get,
    )  # fmt: skip
    assert changes == found


def test_a_table_is_checked_only_with_both_readers_and_only_in_files_the_glob_matches() -> None:
    changed = ["pyproject.toml", "other.toml"]
    read = {"pyproject.toml": "[tool.pytest]\na = 1\n", "other.toml": "[tool.pytest]\n"}.get
    assert protected_changes(changed, TABLE, before=None, after=read) == ()
    assert protected_changes(changed, TABLE, before=read, after=None) == ()
    assert protected_changes(changed, TABLE, before=lambda _: None, after=read) == (
        "pyproject.toml [tool.pytest]",
    )  # fmt: skip


def test_a_file_protected_whole_is_not_also_reported_by_its_table() -> None:
    protect = ("pyproject.toml", "pyproject.toml:tool.pytest", "setup.cfg")
    changes = protected_changes(["pyproject.toml", "setup.cfg"], protect,
                                before=lambda _: None, after=lambda _: "[tool.pytest]\n")  # fmt: skip
    assert changes == ("pyproject.toml", "setup.cfg")


def gate(name: str, passed: bool, ran: list[str]) -> PredicateGate:
    def check(workspace: Path) -> GateReport:
        ran.append(name)
        return GateReport(name=name, passed=passed, summary=f"{name} said so", failures=["t::x"])

    return PredicateGate(check, name=name)


def critic(*replies: ToolCall) -> tuple[Critic, ScriptedModel]:
    model = ScriptedModel(list(replies))
    return Critic(model), model


def run(tmp_path: Path, gates: list[PredicateGate], judge: Critic | None, **kwargs: Any) -> Any:
    sink = RecordingSink()
    evidence = verify(
        round_number=3, goal="make it work", workspace=tmp_path, gates=gates, critic=judge,
        artifact=lambda: "the diff", events=sink, **{"changed": [], "protect": (), **kwargs},
    )  # fmt: skip
    return evidence, sink.events


def test_a_protected_change_fails_the_round_before_any_gate_or_review(tmp_path: Path) -> None:
    ran: list[str] = []
    judge, model = critic(verdict_call(10))
    evidence, events = run(tmp_path, [gate("unit", True, ran)], judge,
                           changed=["src/a.py", "tests/test_a.py"], protect=("tests",))  # fmt: skip
    assert (evidence.violations, evidence.gates, evidence.verdict) == (
        ("tests/test_a.py",),
        (),
        None,
    )
    assert (ran, model.calls, events) == ([], [], [])


def test_each_gate_is_reported_and_the_critic_judges_only_when_all_passed(tmp_path: Path) -> None:
    ran: list[str] = []
    judge, model = critic(verdict_call(9))
    evidence, events = run(tmp_path, [gate("lint", True, ran), gate("unit", False, ran),
                                      gate("late", True, ran)], judge)  # fmt: skip
    assert ran == ["lint", "unit"]
    assert [g.name for g in evidence.gates] == ["lint", "unit"]
    assert (evidence.violations, evidence.verdict, model.calls) == ((), None, [])
    assert [(kind, data["name"], data["passed"]) for kind, data in events] == [
        ("gate_report", "lint", True), ("gate_report", "unit", False),
    ]  # fmt: skip
    data = events[1][1]
    assert {k: v for k, v in data.items() if k != "duration"} == {
        "round": 3, "name": "unit", "passed": False, "summary": "unit said so",
        "failures": ["t::x"],
    }  # fmt: skip
    assert data["duration"] == evidence.gates[1].duration


def test_with_every_gate_passed_the_critic_gives_the_verdict(tmp_path: Path) -> None:
    judge, model = critic(verdict_call(6, ["thin"]))
    evidence, _ = run(tmp_path, [gate("unit", True, [])], judge, criteria="It has tests.")
    assert evidence.verdict is not None
    assert (evidence.verdict.score, evidence.verdict.passed) == (6.0, False)
    (call,) = model.calls
    assert "It has tests." in call.messages[1]["content"]
    assert "the diff" in call.messages[1]["content"]
    no_critic, _ = run(tmp_path, [gate("unit", True, [])], None)
    assert no_critic.verdict is None
    no_gates, _ = run(tmp_path, [], critic(verdict_call(9))[0])
    assert no_gates.verdict is not None


def test_a_protected_table_is_judged_in_the_workspace_being_verified(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = "--co"\n')
    (tmp_path / "same.toml").write_text("[tool.pytest]\nx = 1\n")  # changed elsewhere
    (tmp_path / "folder.toml").mkdir()
    (tmp_path / "latin1.toml").write_bytes(b"[tool.pytest]\nx = '\xe9'\n")
    base = {"pyproject.toml": '[tool.pytest.ini_options]\naddopts = "-q"\n',
            "folder.toml": None, "latin1.toml": None, "same.toml": "[tool.pytest]\nx = 1\n"}.get  # fmt: skip
    evidence, _ = run(
        tmp_path, [], None, changed=["pyproject.toml", "same.toml", "folder.toml", "latin1.toml", "gone.toml"],
        protect=("*.toml:tool.pytest",), read_base=base,
    )  # fmt: skip
    assert evidence.violations == ("pyproject.toml [tool.pytest]",)


def test_evidence_cannot_be_changed_once_found(tmp_path: Path) -> None:
    evidence, _ = run(tmp_path, [], None, changed=["conftest.py"], protect=("conftest.py",))
    with pytest.raises(AttributeError):
        evidence.violations = ()
    assert evidence.violations == ("conftest.py",)
