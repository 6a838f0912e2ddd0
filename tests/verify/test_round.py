"""One round's verification: default protection, the gates, and the critic's event."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import Agent, Critic, OuterLoop, ScriptedModel
from harness.core.errors import ConfigError, ToolError
from harness.core.event_schema import CriticVerdict
from harness.tools.paths import protecting_pattern
from harness.verify.critic import Verdict
from harness.verify.gates import CommandGate, GateReport, PredicateGate
from harness.verify.pytest_gate import PytestGate
from harness.verify.round import (
    PYTEST_CONFIG_FILES,
    ROOT_TEST_FILES,
    default_protect,
    gate_event,
    protected_changes,
    verify,
)
from tests.conftest import RecordingSink, verdict_call


def test_named_test_paths_are_protected_relative_to_the_workspace() -> None:
    gate = PytestGate("./tests/unit/ tests/it/../e2e tests/test_a.py::test_b -k slow")

    protect = default_protect([gate, CommandGate("ruff check .")])

    assert protect == ("tests/unit", "tests/e2e", "tests/test_a.py", *PYTEST_CONFIG_FILES)


@pytest.mark.parametrize("args", ["", "-x -q", ".", "./"])
def test_a_gate_on_the_whole_root_protects_test_files_anywhere(args: str) -> None:
    protect = default_protect([PytestGate(args)])

    assert protect == (*ROOT_TEST_FILES, *PYTEST_CONFIG_FILES)
    for path in ("test_top.py", "src/pkg/test_deep.py", "src/pkg/deep_test.py", "tests/data.json"):
        assert protecting_pattern(protect, path) is not None, path
    for path in ("src/pkg/core.py", "pyproject.toml", "docs/testing.md"):
        assert protecting_pattern(protect, path) is None, path


def test_an_option_value_is_not_protected() -> None:
    protect = default_protect([PytestGate("--cov src -n 2 tests")])

    assert protecting_pattern(protect, "tests/test_x.py") == "tests"
    assert protecting_pattern(protect, "src/calc.py") is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ("../x", "gates: PytestGate test path '../x' is outside the workspace"),
        ("tests/../../x", "gates: PytestGate test path 'tests/../../x' is outside the workspace"),
        ("/srv/project/tests", "gates: PytestGate test path '/srv/project/tests' is absolute"),
    ],
)
def test_a_test_path_outside_the_workspace_is_a_configuration_error(
    args: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=f"^{message}"):
        default_protect([PytestGate(args)])


def test_the_outer_loop_refuses_such_a_gate_when_it_is_built(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="outside the workspace"):
        OuterLoop("goal", Agent(ScriptedModel([])), gates=[PytestGate("../x")], workspace=tmp_path)


def test_the_critic_reports_its_verdict_once_with_the_round_and_its_prompt(
    tmp_path: Path,
) -> None:
    loop_events = RecordingSink()
    critic_model = ScriptedModel([verdict_call(9)])
    critic = Critic(critic_model, events=loop_events)

    evidence = verify(
        round_number=2,
        goal="say hello",
        workspace=tmp_path,
        changed=["hello.txt"],
        protect=(),
        gates=[CommandGate("true", name="ok")],
        critic=critic,
        artifact=lambda: "hello",
        events=loop_events,
    )

    assert evidence.verdict is not None
    assert evidence.verdict.passed
    assert [kind for kind, _ in loop_events.events] == ["gate_report", "critic_verdict"]
    verdict = loop_events.events[1][1]
    assert verdict["round"] == 2
    assert verdict["messages"] == critic_model.calls[0].messages
    assert isinstance(loop_events.models[1], CriticVerdict)


def test_an_artifact_that_cannot_be_read_fails_the_review_without_asking_the_critic(
    tmp_path: Path,
) -> None:
    loop_events = RecordingSink()
    critic_model = ScriptedModel([verdict_call(10, [])])
    critic = Critic(critic_model, threshold=7.5, events=loop_events)

    def artifact() -> str:
        raise ToolError("report.md is a link")

    evidence = verify(
        round_number=3,
        goal="write the report",
        workspace=tmp_path,
        changed=["report.md"],
        protect=(),
        gates=[CommandGate("true", name="ok")],
        critic=critic,
        artifact=artifact,
        events=loop_events,
    )

    assert evidence.violations == ()
    assert [report.name for report in evidence.gates] == ["ok"]
    assert evidence.verdict == Verdict(
        score=0.0,
        passed=False,
        reasons=["the artifact was not read: report.md is a link"],
        fixes=["Deliver the artifact as a regular file in the workspace, not a link to one."],
        threshold=7.5,
    )
    assert critic_model.calls == []
    assert [kind for kind, _ in loop_events.events] == ["gate_report", "critic_verdict"]
    assert loop_events.events[1][1]["round"] == 3


# --- pytest's configuration surfaces ---------------------------------------------------------

PYPROJECT = '[project]\nname = "calc"\ndependencies = []\n\n[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'


@pytest.mark.parametrize(
    "path",
    [
        ".pytest.ini",
        "pytest.toml",
        "sitecustomize.py",
        "src/usercustomize.py",
        "site.pth",
        "lib/extra.pth",
        "pytest.py",
        "pytest/__init__.py",
        "_pytest/main.py",
        "sub/conftest.py",
    ],
)
def test_every_pytest_surface_is_protected_by_default(path: str) -> None:
    protect = default_protect([PytestGate("tests")])

    assert protected_changes([path, "calc.py"], protect) == (path,)


@pytest.mark.parametrize(
    ("after", "violations"),
    [
        (PYPROJECT.replace("dependencies = []", 'dependencies = ["attrs"]'), ()),
        (PYPROJECT + 'addopts = "-p myplugin"\n', ("pyproject.toml [tool.pytest]",)),
        (
            PYPROJECT.replace("[tool.pytest.ini_options]", "[tool.other]"),
            ("pyproject.toml [tool.pytest]",),
        ),
        (PYPROJECT + "\n[tool.pytest]\naddopts = ['--co']\n", ("pyproject.toml [tool.pytest]",)),
        (PYPROJECT + "[broken\n", ("pyproject.toml [tool.pytest]",)),
    ],
    ids=["dependencies", "addopts", "removed", "pytest9-table", "unreadable"],
)
def test_pyprojects_pytest_table_is_protected_not_the_file(
    after: str, violations: tuple[str, ...]
) -> None:
    protect = default_protect([PytestGate("tests")])
    before = {"pyproject.toml": PYPROJECT}.get
    now = {"pyproject.toml": after}.get

    assert protected_changes(["pyproject.toml"], protect, before=before, after=now) == violations


def test_a_new_pyproject_with_a_pytest_table_is_a_violation() -> None:
    protect = default_protect([PytestGate()])
    now = {"sub/pyproject.toml": "[tool.pytest.ini_options]\naddopts = '--co'\n"}.get

    assert protected_changes(["sub/pyproject.toml"], protect, before=lambda _: None, after=now) == (
        "sub/pyproject.toml [tool.pytest]",
    )


def test_the_critic_is_shown_what_a_passing_gate_notes(tmp_path: Path) -> None:
    def noting(workspace: Path) -> GateReport:
        return GateReport(
            name="x", passed=True, summary="ok", notes="C3: s-1 says 1887 but s-2 says 1888"
        )

    silent = PredicateGate(lambda workspace: True, name="silent")
    critic_model = ScriptedModel([verdict_call(9), verdict_call(9)])
    critic = Critic(critic_model, criteria="Judge the findings.")
    for gates in ([silent], [PredicateGate(noting, name="sources"), silent]):
        verify(
            round_number=1, goal="answer", workspace=tmp_path, changed=[], protect=(),
            gates=gates, critic=critic, artifact=lambda: "findings", events=RecordingSink(),
        )  # fmt: skip
    without, noted = (str(call.messages[-1]["content"]) for call in critic_model.calls)
    assert "gate notes" not in without
    assert (
        "Judge the findings.\n\nThe sources gate notes:\nC3: s-1 says 1887 but s-2 says 1888"
        in noted
    )


class _TimedReport(GateReport):
    """A gate's own report, with a field of its own beyond the harness's."""

    ts: float = 0.0
    machine: str = ""


def test_a_gate_report_of_a_gates_own_making_gives_its_event_only_the_reports_fields() -> None:
    report = _TimedReport(
        name="custom", passed=False, summary="2 bad", failures=["a", "b"], output_tail="tail",
        duration=1.5, exit_code=2, notes="weigh this", ts=1.0, machine="m1",
    )  # fmt: skip
    event = gate_event(3, report)
    assert (event.round, event.name, event.passed, event.summary) == (3, "custom", False, "2 bad")
    assert (event.failures, event.output_tail, event.duration) == (["a", "b"], "tail", 1.5)
    assert event.ts != 1.0  # the event's own time, not the report's field of that name
    assert not {"machine", "notes", "exit_code"} & set(event.model_dump())
